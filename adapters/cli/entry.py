"""The `cronpilot` console script: imports the CLI with the collector paused, then runs it with
the collector on (`collector_paused`); `cronpilot.adapters.cli.main` holds the CLI itself."""

from __future__ import annotations

from typing import NoReturn

from cronpilot.adapters.cli.collector import collector_paused


def run() -> NoReturn:
    with collector_paused():
        from cronpilot.adapters.cli import main
    main.run()


if __name__ == "__main__":
    run()
