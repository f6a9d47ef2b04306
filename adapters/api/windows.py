"""`?since=&until=` on the list routes (runs, proposals, sessions, notifications): read as the
CLI reads `--since` / `--until` (`adapters.time_range`); a bad value is a 400 problem."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Query

from cronpilot.adapters.time_range import time_range
from cronpilot.adapters.web.context import Context
from cronpilot.domain.ports import Clock
from cronpilot.domain.schedule.time_range import TimeRange

Since = Annotated[
    str | None,
    Query(description="Only those at or after this: an ISO time, or a duration back (`2h`)."),
]
Until = Annotated[
    str | None,
    Query(description="Only those before this: an ISO time, or a duration back (`1h`)."),
]


def window(clock: Clock, since: str | None, until: str | None) -> TimeRange | None:
    """Raises `InvalidTimeRange`."""
    if since is None and until is None:
        return None
    return time_range(since, until, clock.now())


def _within(ctx: Context, since: Since = None, until: Until = None) -> TimeRange | None:
    return window(ctx.clock, since, until)


Within = Annotated[TimeRange | None, Depends(_within)]
"""`?since=&until=` read against the API's clock: a list route's window."""
