"""An endpoint's quiet windows and the next one (`domain.schedule.quiet`), as `endpoints show`, the
API's endpoint view and the console show them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from cronpilot.adapters.views.formats import span
from cronpilot.adapters.views.schedules import fire_time
from cronpilot.domain.errors import InvalidSchedule
from cronpilot.domain.model import Endpoint
from cronpilot.domain.schedule.quiet import QuietSpan, describe, next_window


def _next(endpoint: Endpoint, now: datetime) -> QuietSpan | None:
    try:
        return next_window(endpoint.spec.quiet, now)
    except InvalidSchedule:
        # Refused at apply; a window stored before that check has no next one to show.
        return None


def quiet_view(endpoint: Endpoint, now: datetime) -> dict[str, Any]:
    """`next_quiet`: the quiet window in force at `now` or the next one, its start, end and
    what it does to slots (None when there is none); `endpoint_view` has the windows."""
    upcoming = _next(endpoint, now) if endpoint.spec.quiet else None
    following = None
    if upcoming is not None:
        following = {
            "start": upcoming.start.isoformat(),
            "end": upcoming.end.isoformat(),
            "in_force": upcoming.holds(now),
            "every_seconds": upcoming.every_seconds,
        }
    return {"next_quiet": following}


def quiet_text(endpoint: Endpoint, now: datetime) -> str:
    """`sat,sun; next: Sat 2026-12-05 00:00:00 CET (…) → Mon …, skipped` or `-`."""
    windows = endpoint.spec.quiet
    if not windows:
        return "-"
    declared = "; ".join(f"{describe(w)} {w.timezone}" for w in windows)
    upcoming = _next(endpoint, now)
    if upcoming is None:
        return f"{declared}; none ahead"
    timezone = windows[0].timezone
    when = "now" if upcoming.holds(now) else "next"
    what = "skipped" if upcoming.skips else f"one call per {span(upcoming.every_seconds or 0)}"
    start, end = fire_time(upcoming.start, timezone), fire_time(upcoming.end, timezone)
    return f"{declared}; {when}: {start} → {end}, {what}"
