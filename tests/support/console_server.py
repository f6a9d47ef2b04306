"""The console of `cronpilot serve` over the demo's story (`console_story.py`), served from a
thread of its own on a loopback port: its loop runs the server while the caller's thread
drives a browser (Playwright's sync API cannot run inside an event loop)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cronpilot.adapters.bootstrap import build_api, token_authenticator
from cronpilot.adapters.sql import open_sql_store, upgrade_database
from cronpilot.adapters.wake import InProcessWaker
from cronpilot.domain.access.access import Scope
from tests.support.console_story import play
from tests.support.loopback import loopback_server
from tests.support.settings import settings_for_tests

START_SECONDS = 60


@dataclass
class Console:
    url: str
    secrets: dict[Scope, str]
    """A token of each scope."""


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


@contextmanager
def served_console(database: Path) -> Iterator[Console]:
    """The console over a new SQLite database at `database`, filled by the story."""
    served = _Server()
    thread = threading.Thread(target=served.run, args=(database,), daemon=True)
    thread.start()
    assert served.ready.wait(START_SECONDS), "the console did not start"
    if served.console is None:
        raise AssertionError("the console did not start") from served.error
    try:
        yield served.console
    finally:
        served.loop.call_soon_threadsafe(setattr, served.server, "should_exit", True)
        thread.join(START_SECONDS)
