"""A schedule, a pause and a cron baseline's fire times, as people and scripts read them."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from cronpilot.adapters.views.formats import relative, span
from cronpilot.domain.model import Pause, Schedule
from cronpilot.domain.schedule.schedule import next_cron_fires, zone


def schedule_text(schedule: Schedule) -> str:
    if schedule.cron is not None:
        zone = "" if schedule.timezone == "UTC" else f" {schedule.timezone}"
        return f"cron {schedule.cron}{zone}"
    if schedule.interval_seconds is None:
        return "after its upstreams"
    return f"every {span(schedule.interval_seconds)}"


NEXT_FIRES = 3
"""How many fire times `endpoints show` and `apply` preview for a cron endpoint."""


def cron_fires(schedule: Schedule, now: datetime) -> list[datetime]:
    """The next `NEXT_FIRES` times a cron baseline fires after `now` (none for an interval)."""
    if schedule.cron is None:
        return []
    return next_cron_fires(schedule.cron, schedule.timezone, now, NEXT_FIRES)


def fire_time(moment: datetime, timezone: str) -> str:
    """`Mon 2027-01-04 09:00:00 CET (08:00:00Z)`: the zone's wall time, then UTC's."""
    local = moment.astimezone(zone(timezone))
    utc = moment.astimezone(UTC)
    shown = f"{local:%a %Y-%m-%d %H:%M:%S %Z}"
    if timezone == "UTC":
        return shown
    at_utc = f"{utc:%H:%M:%S}" if utc.date() == local.date() else f"{utc:%Y-%m-%d %H:%M:%S}"
    return f"{shown} ({at_utc}Z)"


def fires_view(fires: Sequence[datetime], timezone: str) -> list[dict[str, str]]:
    """Fire times for scripts: the instant in UTC and the zone's wall time, both ISO-8601."""
    tz = zone(timezone)
    return [
        {"at": moment.astimezone(UTC).isoformat(), "local": moment.astimezone(tz).isoformat()}
        for moment in fires
    ]


def pause_text(pause: Pause | None, now: datetime) -> str:
    """`until resumed: why (by who)`, `resumes in 2h: why`, or `no`."""
    if pause is None:
        return "no"
    until = "until resumed" if pause.until is None else f"resumes {relative(pause.until, now)}"
    by = "" if pause.by is None else f" (by {pause.by})"
    return f"{until}: {pause.reason}{by}"


MAX_COUNT = 1000
"""The most fire times a cron preview lists (`cronpilot cron --count`, the API's `count`)."""
