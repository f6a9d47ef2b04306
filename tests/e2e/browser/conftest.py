"""The console in a real browser: headless Chromium from Debian's packages driven by
Playwright, against `cronpilot serve`'s app on a loopback port over a SQLite database that the
demo's story filled (`tests/support/console_story.py`). Skipped, saying why, where Chromium or
Playwright is missing, or failed when CRONPILOT_REQUIRE_BROWSER=1 (`.ci/run` installs Chromium
and sets it)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.browser import Tab, chromium, chromium_missing, open_tab
from tests.support.console_server import Console, served_console


@pytest.fixture(scope="package")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    missing = chromium_missing()
    if missing:
        if os.environ.get("CRONPILOT_REQUIRE_BROWSER") == "1":
            pytest.fail(missing)
        pytest.skip(missing)
    with served_console(tmp_path_factory.mktemp("console") / "demo.db") as served:
        yield served


@pytest.fixture(scope="package")
def browser(console: Console) -> Iterator[Any]:
    with chromium() as launched:
        yield launched


@pytest.fixture
def tab(browser: Any, console: Console) -> Iterator[Tab]:
    with open_tab(browser, console) as opened:
        yield opened
