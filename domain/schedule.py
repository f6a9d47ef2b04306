"""Baseline schedules: validation and the next baseline fire time.

Cron maths is APScheduler's (DST-correct in the endpoint's time zone); we only choose which
question to ask it.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from apscheduler.triggers.cron import CronTrigger

from domain.errors import InvalidSchedule
from domain.model import Schedule

CRON_RESOLUTION = timedelta(seconds=1)
MIN_SECONDS = 0.001
"""Shorter intervals round towards zero in `timedelta` and would make the grid stand still."""
MAX_SECONDS = 10 * 365 * 24 * 3600.0
"""Longer intervals and clamps push `now + delay` towards `datetime.max` and overflow."""
_CRON_FIELDS = 5
_CRON_FIELDS_WITH_SECONDS = 6
_CRON_REFERENCE = datetime(2000, 1, 1, tzinfo=UTC)
"""Crontabs have no year field, so one that fires after any date fires after every date."""


def zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    # A name like "Europe" opens a directory of the tz database, not a zone: OSError.
    except (ZoneInfoNotFoundError, ValueError, OSError) as exc:
        raise InvalidSchedule(name, "unknown time zone") from exc


@lru_cache(maxsize=4096)
def cron_trigger(expr: str, timezone: str) -> CronTrigger:
    """A trigger for a 5-field crontab, or 6 fields with seconds first (cached: pure)."""
    tz = zone(timezone)
    fields = expr.split()
    if len(fields) not in (_CRON_FIELDS, _CRON_FIELDS_WITH_SECONDS):
        raise InvalidSchedule(
            expr, f"has {len(fields)} fields, expected 5 (minute first) or 6 (second first)"
        )
    try:
        if len(fields) == _CRON_FIELDS_WITH_SECONDS:
            second, minute, hour, day, month, dow = fields
            return CronTrigger(
                second=second,
                minute=minute,
                hour=hour,
                day=day,
                month=month,
                day_of_week=dow,
                timezone=tz,
            )
        return CronTrigger.from_crontab(expr, timezone=tz)
    except (ValueError, TypeError) as exc:
        raise InvalidSchedule(expr, str(exc) or "not a cron expression") from exc


def _check_seconds(label: str, value: float | None) -> None:
    if value is None:
        return
    if not math.isfinite(value) or not MIN_SECONDS <= value <= MAX_SECONDS:
        raise InvalidSchedule(
            str(value), f"{label} must be between {MIN_SECONDS} and {MAX_SECONDS:.0f} seconds"
        )


def validate_schedule(
    schedule: Schedule,
    min_interval_seconds: float | None = None,
    max_interval_seconds: float | None = None,
) -> None:
    """Raise `InvalidSchedule` unless exactly one baseline is set and the clamps make sense."""
    if (schedule.cron is None) == (schedule.interval_seconds is None):
        raise InvalidSchedule(
            schedule.cron or str(schedule.interval_seconds),
            "set exactly one of cron or interval",
        )
    zone(schedule.timezone)
    if schedule.cron is not None:
        next_cron_fire(schedule.cron, schedule.timezone, _CRON_REFERENCE)
    _check_seconds("interval", schedule.interval_seconds)
    _check_seconds("min interval", min_interval_seconds)
    _check_seconds("max interval", max_interval_seconds)
    if (
        min_interval_seconds is not None
        and max_interval_seconds is not None
        and min_interval_seconds > max_interval_seconds
    ):
        raise InvalidSchedule(
            f"min={min_interval_seconds} max={max_interval_seconds}",
            "min interval is above max interval",
        )


def _fires_every_hour(trigger: CronTrigger) -> bool:
    hours = next(field for field in trigger.fields if field.name == "hour")
    return all(hours.get_next_value(datetime(2000, 1, 1, hour)) == hour for hour in range(24))


def _is_repeated_wall_time(fire: datetime, tz: ZoneInfo) -> bool:
    """True for the second pass through an hour that a fall-back DST change repeats."""
    local = fire.astimezone(tz)
    return local.fold == 1 and local.replace(fold=0).utcoffset() != local.utcoffset()


def _next_trigger_fire(trigger: CronTrigger, expr: str, after: datetime) -> datetime:
    # Cron fires on whole seconds: the first whole second past `after` is the earliest candidate.
    fire: datetime | None = trigger.get_next_fire_time(
        None, after.replace(microsecond=0) + CRON_RESOLUTION
    )
    if fire is None:
        raise InvalidSchedule(expr, "never fires again")
    return fire.astimezone(UTC)


def next_cron_fire(expr: str, timezone: str, after: datetime) -> datetime:
    """The first fire time strictly after `after`, in UTC.

    When the clocks fall back, a job pinned to particular hours fires once per wall-clock time
    (in the first pass), as cron does; a job firing every hour keeps its rhythm in UTC, so it
    neither skips nor doubles. APScheduler alone would fire a pinned job in both passes.
    """
    trigger = cron_trigger(expr, timezone)
    fire = _next_trigger_fire(trigger, expr, after)
    tz = zone(timezone)
    while _is_repeated_wall_time(fire, tz) and not _fires_every_hour(trigger):
        fire = _next_trigger_fire(trigger, expr, fire)
    return fire


def baseline_period(schedule: Schedule, now: datetime) -> timedelta:
    """The baseline's period: the interval, or for cron the gap between its next two fires."""
    if schedule.interval_seconds is not None:
        return timedelta(seconds=schedule.interval_seconds)
    assert schedule.cron is not None
    first = next_cron_fire(schedule.cron, schedule.timezone, now)
    return next_cron_fire(schedule.cron, schedule.timezone, first) - first
