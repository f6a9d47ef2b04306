"""Screenshots of the web console's main pages, for docs/console.md: `python -m bench.screenshots`.

The demo's story (tests/support/console_story.py: the example jobs against the simulator on a
fake clock, so every run of this script draws the same data) fills a temporary SQLite
database; the console is served on loopback and Debian's Chromium (`apt-get install chromium`)
takes each page, through Playwright as the browser tests do. Writes docs/screenshots/*.png.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from cronpilot.domain.access.access import Scope
from tests.support.browser import Tab, chromium, chromium_missing, open_tab
from tests.support.console_server import served_console

OUT = Path(__file__).resolve().parent.parent / "docs" / "screenshots"
DESKTOP = (1280, 800)
PHONE = (390, 844)


def _shoot(tab: Tab, path: str, name: str, out: Path, *, full: bool = True) -> None:
    tab.open(path)
    tab.page.screenshot(path=str(out / f"{name}.png"), full_page=full)
    assert tab.errors == [], f"{path}: {tab.errors}"
    print(f"{out / name}.png  ({path})")


def _first_link(tab: Tab, path: str, selector: str) -> str:
    tab.open(path)
    href: str | None = tab.page.locator(selector).first.get_attribute("href")
    assert href, f"no {selector} on {path}"
    return href


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help="Folder of the PNG files.")
    out = parser.parse_args().out
    missing = chromium_missing()
    if missing:
        sys.exit(f"error: {missing}")
    out.mkdir(parents=True, exist_ok=True)
    with (
        tempfile.TemporaryDirectory() as workdir,
        served_console(Path(workdir) / "demo.db") as console,
        chromium() as browser,
    ):
        with open_tab(browser, console, *DESKTOP) as tab:
            tab.sign_in(Scope.ADMIN)
            _shoot(tab, "/console/endpoints", "endpoints", out)
            _shoot(tab, "/console/endpoints/queue/processor", "endpoint", out)
            _shoot(tab, "/console/runs", "runs", out, full=False)
            _shoot(tab, _first_link(tab, "/console/runs?job=etl", "table.runs td a"), "run", out)
            _shoot(tab, "/console/proposals", "proposals", out)
            _shoot(tab, "/console/sessions", "sessions", out, full=False)
            session = _first_link(
                tab, "/console/sessions?endpoint=queue/processor", "table.sessions td a"
            )
            _shoot(tab, session, "session", out)
            _shoot(tab, "/console/graph", "graph", out)
            _shoot(tab, "/console/search?q=which+endpoint+tells+me+the+fraud+rate", "search", out)
        with open_tab(browser, console, *PHONE) as tab:
            tab.sign_in(Scope.ADMIN)
            _shoot(tab, "/console/endpoints", "endpoints-phone", out, full=False)


if __name__ == "__main__":
    main()
