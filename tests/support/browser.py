"""Headless Chromium from Debian's packages, driven by Playwright without a browser of its own
(`executable_path`): for the browser tests and the screenshots script."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from cronpilot.domain.access.access import Scope
from tests.support.console_server import Console

CHROMIUM = os.environ.get("CRONPILOT_CHROMIUM", "/usr/bin/chromium")


def chromium_missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    if shutil.which(CHROMIUM) is None:
        return f"{CHROMIUM} is missing: apt-get install chromium chromium-driver"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is missing: pip install -e '.[dev]'"
    return None


@contextmanager
def chromium() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        # Root in a container has no user namespaces for Chromium's sandbox.
        launched = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield launched
        finally:
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


@contextmanager
def open_tab(browser: Any, console: Console, width: int = 1280, height: int = 800) -> Iterator[Tab]:
    """A page of a fresh browser context (no cookie yet) collecting its errors."""
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        yield Tab(page, console, errors)
    finally:
        context.close()
