"""The console in a real browser: headless Chromium from Debian's packages driven by
Playwright, against `cronpilot serve`'s app on a loopback port over a SQLite database that the
demo's story filled (`tests/support/console_story.py`). Skipped, saying why, where Chromium or
Playwright is missing; `.ci/run` installs Chromium."""

from __future__ import annotations

import asyncio
import os
import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from cronpilot.adapters.bootstrap import build_api, token_authenticator
from cronpilot.adapters.sql import open_sql_store, upgrade_database
from cronpilot.adapters.wake import InProcessWaker
from cronpilot.domain.access import Scope
from tests.api.conftest import loopback_server
from tests.support.console_story import play
from tests.support.settings import settings_for_tests

CHROMIUM = os.environ.get("CRONPILOT_CHROMIUM", "/usr/bin/chromium")
START_SECONDS = 60


def chromium_missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    if shutil.which(CHROMIUM) is None:
        return f"{CHROMIUM} is missing: apt-get install chromium chromium-driver"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is missing: pip install -e '.[dev]'"
    return None


@dataclass
class Console:
    """The console served from a thread of its own: its loop runs the server while the test's
    thread drives the browser."""

    url: str
    secrets: dict[Scope, str]


@dataclass
class _Server:
    loop: asyncio.AbstractEventLoop = field(default_factory=asyncio.new_event_loop)
    ready: threading.Event = field(default_factory=threading.Event)
    console: Console | None = None
    error: BaseException | None = None
    server: Any = None

    async def serve(self, database: Path) -> None:
        url = f"sqlite+aiosqlite:///{database}"
        await upgrade_database(url)
        store = await open_sql_store(url)
        waker = InProcessWaker()
        try:
            story = await play(store)
            app = build_api(
                settings_for_tests(database_url=url),
                store,
                waker,
                story.clock,
                token_authenticator(store, story.clock),
            )
            self.server, sock = loopback_server(app)
            self.console = Console(f"http://127.0.0.1:{sock.getsockname()[1]}", story.secrets)
            self.ready.set()
            await self.server.serve(sockets=[sock])
            sock.close()
        finally:
            await waker.close()
            await store.close()

    def run(self, database: Path) -> None:
        try:
            self.loop.run_until_complete(self.serve(database))
        except BaseException as error:
            self.error = error
            self.ready.set()
        finally:
            self.loop.close()


@pytest.fixture(scope="package")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    missing = chromium_missing()
    if missing:
        pytest.skip(missing)
    served = _Server()
    thread = threading.Thread(
        target=served.run, args=(tmp_path_factory.mktemp("console") / "demo.db",), daemon=True
    )
    thread.start()
    assert served.ready.wait(START_SECONDS), "the console did not start"
    if served.console is None:
        raise AssertionError("the console did not start") from served.error
    yield served.console
    served.loop.call_soon_threadsafe(setattr, served.server, "should_exit", True)
    thread.join(START_SECONDS)


@pytest.fixture(scope="package")
def browser(console: Console) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        launched = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


@dataclass
class Tab:
    """A page of a fresh browser context, with every console error and uncaught exception it
    met."""

    page: Any
    console: Console
    errors: list[str]

    def open(self, path: str) -> Any:
        response = self.page.goto(f"{self.console.url}{path}")
        assert response is not None and response.ok, f"{path}: {response and response.status}"
        return response

    def sign_in(self, scope: Scope) -> None:
        self.page.goto(f"{self.console.url}/console/")
        self.page.get_by_label("API token").fill(self.console.secrets[scope])
        self.page.get_by_role("button", name="Sign in").click()
        self.page.wait_for_url("**/console/endpoints")


@pytest.fixture
def tab(browser: Any, console: Console) -> Iterator[Tab]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        yield Tab(page, console, errors)
    finally:
        context.close()
