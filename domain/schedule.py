"""Baseline schedules: validation and the next baseline fire time.

Cron fields are matched by cronsim (Debian cron's semantics); the rules for daylight-saving
changes are ours and live here, in `next_cron_fire` (README, "Cron maths").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

from domain.errors import InvalidSchedule
from domain.model import Schedule

MIN_SECONDS = 0.001
"""Shorter intervals round towards zero in `timedelta` and would make the grid stand still."""
MAX_SECONDS = 10 * 365 * 24 * 3600.0
"""Longer intervals and clamps push `now + delay` towards `datetime.max` and overflow."""
_CRON_FIELDS = 5
_CRON_FIELDS_WITH_SECONDS = 6
_CRON_REFERENCE = datetime(2000, 1, 1, tzinfo=UTC)
"""Crontabs have no year field, so one that fires after any date fires after every date."""
_FIELDS = (
    ("second", "0-59"),
    ("minute", "0-59"),
    ("hour", "0-23"),
    ("day-of-month", "1-31 or L (the last day)"),
    ("month", "1-12 or JAN-DEC"),
    ("day-of-week", "0-7 or SUN-SAT, 0 and 7 being Sunday"),
)
_DAY_OF_MONTH = 3
_DAY_OF_WEEK = 5
_EVERY_HOUR = frozenset(range(24))
MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
"""The crontab macros that name a schedule, and the five fields each stands for."""


def zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    # A name like "Europe" opens a directory of the tz database, not a zone: OSError.
    except (ZoneInfoNotFoundError, ValueError, OSError) as exc:
        raise InvalidSchedule(name, "unknown time zone") from exc


@dataclass(frozen=True)
class Cron:
    """A crontab checked and ready for cronsim.

    `fields` are six, seconds first. `wall_clock` is True when the hour field leaves some hours
    out: such a job is pinned to times of day, which a DST change can skip or repeat, so it is
    computed on the wall clock and then placed in real time (`next_cron_fire`). A job that fires
    every hour runs on real time and keeps its rhythm through a change.
    """

    fields: str
    wall_clock: bool


def _field_error(expr: str, index: int, text: str) -> InvalidSchedule:
    name, allowed = _FIELDS[index]
    return InvalidSchedule(
        expr, f"{name} field {text!r} is not valid (expected {allowed}; lists, ranges, steps)"
    )


def _expand_macro(expr: str, word: str) -> str:
    fields = MACROS.get(word.lower())
    if fields is not None:
        return fields
    if word.lower() == "@reboot":
        raise InvalidSchedule(expr, "@reboot is not a schedule: cronpilot has no boot to run at")
    raise InvalidSchedule(expr, f"unknown macro {word!r}; known: {', '.join(MACROS)}")


def _outside_cronsim_subset(index: int, text: str) -> bool:
    """cronsim also reads Quartz's LW, 5L and MON#2, and a step after L that it ignores: none
    is Debian cron, so only a plain L term, in the day-of-month field, is accepted."""
    terms = text.upper().split(",")
    if index == _DAY_OF_MONTH:
        return any("L" in term and term != "L" for term in terms)
    if index == _DAY_OF_WEEK:
        return any("L" in term or "#" in term for term in terms)
    return False


@lru_cache(maxsize=4096)
def parse_cron(expr: str) -> Cron:
    """Check a crontab: 5 fields (minute first), 6 (second first) or a macro (cached: pure)."""
    words = expr.split()
    if len(words) == 1 and words[0].startswith("@"):
        words = _expand_macro(expr, words[0]).split()
    if len(words) not in (_CRON_FIELDS, _CRON_FIELDS_WITH_SECONDS):
        raise InvalidSchedule(
            expr,
            f"has {len(words)} fields, expected 5 (minute first), 6 (second first) "
            "or a macro such as @daily",
        )
    if len(words) == _CRON_FIELDS:
        words.insert(0, "0")
    # Each field alone against stars, so that the error names the field at fault.
    for index, text in enumerate(words):
        if _outside_cronsim_subset(index, text):
            raise _field_error(expr, index, text)
        probe = ["*"] * len(words)
        probe[index] = text
        try:
            CronSim(" ".join(probe), _CRON_REFERENCE)
        # ValueError: a number of thousands of digits, past Python's limit for `int(str)`.
        except (CronSimError, ValueError) as exc:
            raise _field_error(expr, index, text) from exc
    fields = " ".join(words)
    try:
        hours = CronSim(fields, _CRON_REFERENCE).hours
    except CronSimError as exc:
        # Every field is fine alone: together they name a day no month has (30 February).
        raise InvalidSchedule(expr, "never fires: no month has that day") from exc
    return Cron(fields, wall_clock=hours != _EVERY_HOUR)


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


def _is_skipped(wall: datetime, tz: tzinfo) -> bool:
    """True for a wall time that a spring-forward DST change skips (02:30 in Paris in March)."""
    local = wall.replace(tzinfo=tz)
    return local.astimezone(UTC).astimezone(tz).replace(tzinfo=None) != wall


def _placed(wall: datetime, tz: tzinfo) -> datetime:
    """The instant a wall-clock fire time stands for, in UTC.

    A repeated wall time means its first pass (fold 0). A skipped one means the moment the
    clocks went forward, the first valid time after it: found by halving the gap between the
    instants its two offsets would give, to the second (fires are on whole seconds).
    """
    if not _is_skipped(wall, tz):
        return wall.replace(tzinfo=tz, fold=0).astimezone(UTC)
    before = wall.replace(tzinfo=tz, fold=0).utcoffset()
    after = wall.replace(tzinfo=tz, fold=1).utcoffset()
    assert before is not None and after is not None
    old = (wall - after).replace(tzinfo=UTC)  # an instant still on the old offset
    low, high = 0, int((after - before).total_seconds())  # seconds from `old`; high: new offset
    while high - low > 1:
        middle = (low + high) // 2
        if (old + timedelta(seconds=middle)).astimezone(tz).utcoffset() == before:
            low = middle
        else:
            high = middle
    return old + timedelta(seconds=high)


def next_cron_fire(expr: str, timezone: str, after: datetime) -> datetime:
    """The first fire time strictly after `after`, in UTC.

    A job that fires every hour runs on real time in the zone: it keeps its rhythm when the
    clocks change (an hour repeated in autumn runs in both passes, a skipped one is not made
    up). Any other job runs on the wall clock: a time the spring change skips fires once, when
    the clocks go forward; a time repeated in autumn fires once, in its first pass; so no day or
    month is ever skipped.
    """
    cron = parse_cron(expr)
    tz = zone(timezone)
    local = after.astimezone(tz)
    try:
        if not cron.wall_clock:
            return next(CronSim(cron.fields, local)).astimezone(UTC)
        for wall in CronSim(cron.fields, local.replace(tzinfo=None)):
            # A wall time met again in the second pass of a repeated hour was placed in its
            # first pass, before `after`: it already fired.
            fire = _placed(wall, tz)
            if fire > after:
                return fire
    except (StopIteration, OverflowError):
        pass
    # cronsim gives up after 50 years without a fire; the end of the calendar overflows.
    raise InvalidSchedule(expr, "never fires again")


def next_cron_fires(expr: str, timezone: str, after: datetime, count: int) -> list[datetime]:
    """The next `count` fire times strictly after `after`, in UTC."""
    fires: list[datetime] = []
    for _ in range(count):
        after = next_cron_fire(expr, timezone, after)
        fires.append(after)
    return fires


def baseline_period(schedule: Schedule, now: datetime) -> timedelta:
    """The baseline's period: the interval, or for cron the gap between its next two fires."""
    if schedule.interval_seconds is not None:
        return timedelta(seconds=schedule.interval_seconds)
    assert schedule.cron is not None
    first = next_cron_fire(schedule.cron, schedule.timezone, now)
    return next_cron_fire(schedule.cron, schedule.timezone, first) - first
