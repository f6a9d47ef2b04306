"""`--since` / `--until` on the list commands (sessions, proposals, notifications, audit, runs):
read as the API reads `?since=&until=` (`adapters.time_range`)."""

from __future__ import annotations

from typing import Annotated

import typer

from cronpilot.adapters.bootstrap import build_clock
from cronpilot.adapters.time_range import time_range
from cronpilot.domain.schedule.time_range import TimeRange

SinceOption = Annotated[
    str | None,
    typer.Option(
        help="Only those at or after this: an ISO time, or a duration back from now (2h, 7d)."
    ),
]
UntilOption = Annotated[
    str | None,
    typer.Option(help="Only those before this: an ISO time, or a duration back from now (1h)."),
]


def window(since: str | None, until: str | None) -> TimeRange | None:
    """The window the options name, None for neither. Raises `InvalidTimeRange` (one line,
    exit 2) before any store is opened."""
    if since is None and until is None:
        return None
    return time_range(since, until, build_clock().now())
