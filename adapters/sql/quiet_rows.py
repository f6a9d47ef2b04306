"""Quiet windows (`domain.schedule.quiet`) as the endpoints' `quiet` column holds them (JSON), and
as `--json` and the API show them."""

from __future__ import annotations

from datetime import date

from cronpilot.domain.model import JSON
from cronpilot.domain.schedule.quiet import QuietWindow


def quiet_value(windows: tuple[QuietWindow, ...]) -> JSON:
    """The windows as stored; None for none (most endpoints)."""
    if not windows:
        return None
    return [
        {
            "timezone": window.timezone,
            "cron": window.cron,
            "duration_seconds": window.duration_seconds,
            "days": list(window.days),
            "hours": None if window.hours is None else list(window.hours),
            "dates": [day.isoformat() for day in window.dates],
            "every_seconds": window.every_seconds,
        }
        for window in windows
    ]


def quiet_from_value(value: JSON) -> tuple[QuietWindow, ...]:
    """`quiet_value` in reverse."""
    if not value:
        return ()
    return tuple(
        QuietWindow(
            timezone=item["timezone"],
            cron=item["cron"],
            duration_seconds=item["duration_seconds"],
            days=tuple(item["days"]),
            hours=None if item["hours"] is None else (item["hours"][0], item["hours"][1]),
            dates=tuple(date.fromisoformat(day) for day in item["dates"]),
            every_seconds=item["every_seconds"],
        )
        for item in value
    )
