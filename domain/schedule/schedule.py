"""Baseline schedules: validation and the next baseline fire time.

Cron fields are matched by cronsim (Debian cron's semantics); the rules for daylight-saving
changes are ours and live here, in `next_cron_fire` (docs/scheduling.md, "Cron maths").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

from cronpilot.domain.errors import InvalidSchedule
from cronpilot.domain.model import Schedule

MIN_SECONDS = 0.001
"""Shorter intervals round towards zero in `timedelta` and would make the grid stand still."""
MAX_SECONDS = 10 * 365 * 24 * 3600.0
"""Longer intervals and clamps push `now + delay` towards `datetime.max` and overflow."""
_CRON_FIELDS = 5
_CRON_FIELDS_WITH_SECONDS = 6
CRON_RESOLUTION = timedelta(seconds=1)
"""Cron fires on whole seconds."""
_INSTANT = timedelta(microseconds=1)
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


def _passes(wall: datetime, tz: tzinfo) -> tuple[datetime, datetime]:
    """The instants (UTC) of a wall time's first and second pass: equal for most; the second
    later for a time an autumn change repeats; the second earlier for a time a spring change
    skips (PEP 495: fold 0 takes the offset before the change, fold 1 the one after)."""
    first = wall.replace(tzinfo=tz, fold=0).astimezone(UTC)
    return first, wall.replace(tzinfo=tz, fold=1).astimezone(UTC)


def _change(old: datetime, new: datetime, tz: tzinfo) -> datetime:
    """The instant, to the second, at which `tz` moves from `old`'s offset to `new`'s (both in
    UTC, a whole number of seconds apart, with one change between them)."""
    before = old.astimezone(tz).utcoffset()
    low, high = 0, int((new - old).total_seconds())
    while high - low > 1:
        middle = (low + high) // 2
        if (old + timedelta(seconds=middle)).astimezone(tz).utcoffset() == before:
            low = middle
        else:
            high = middle
    return old + timedelta(seconds=high)


def _wall(instant: datetime, tz: tzinfo) -> datetime:
    return instant.astimezone(tz).replace(tzinfo=None, fold=0)


def _first_fire(cron: Cron, tz: tzinfo, start: datetime, after: datetime) -> datetime:
    """The first fire after `after` among the wall times after `start`, placed in real time:
    a repeated time in its first pass; a skipped time, on the wall clock, at the moment the
    clocks went forward, and on real time not at all (the walk goes on from that moment)."""
    walls = CronSim(cron.fields, start)
    while True:
        first, second = _passes(next(walls), tz)
        fire = first if first <= second else _change(second, first, tz)
        if first > second and not cron.wall_clock:
            walls = CronSim(cron.fields, _wall(fire, tz) - CRON_RESOLUTION)
        elif fire > after:
            return fire


def next_cron_fire(expr: str, timezone: str, after: datetime) -> datetime:
    """The first fire time strictly after `after`, in UTC.

    cronsim walks the zone's wall clock; placing its times in real time is ours. A job that
    fires every hour runs on real time: it keeps its rhythm when the clocks change (an hour
    repeated in autumn runs in both passes, a skipped one is not made up). Any other job is
    pinned to times of day: a time the spring change skips fires once, when the clocks go
    forward; a time repeated in autumn fires once, in its first pass; so no day or month is
    ever skipped.
    """
    cron = parse_cron(expr)
    tz = zone(timezone)
    local = after.astimezone(tz)
    wall = local.replace(tzinfo=None, fold=0)
    try:
        first, second = _passes(wall, tz)
        if first == second:
            return _first_fire(cron, tz, wall, after)
        # `after` is in an hour the autumn change repeats, from `start` to `end` (wall times).
        start = _wall(_change(first, second, tz), tz)
        end = start + (second - first)
        if local.fold == 1 and cron.wall_clock:
            # In the second pass: the rest of the hour fired in the first.
            return _first_fire(cron, tz, end - CRON_RESOLUTION, after)
        if local.fold == 1:
            following = next(CronSim(cron.fields, wall))
            if following < end:
                return _passes(following, tz)[1]
            return _first_fire(cron, tz, wall, after)
        fire = _first_fire(cron, tz, wall, after)
        if cron.wall_clock:
            return fire
        # In the first pass, on real time: the second pass replays the hour from its start.
        replayed = next(CronSim(cron.fields, start - CRON_RESOLUTION))
        return min(fire, _passes(replayed, tz)[1]) if replayed <= wall else fire
    except (StopIteration, OverflowError):
        # cronsim gives up after 50 years without a fire; the end of the calendar overflows.
        raise InvalidSchedule(expr, "never fires again") from None


def latest_cron_fire(expr: str, timezone: str, first: datetime, now: datetime) -> datetime:
    """The latest fire at or before `now`, given `first`, a fire at or before it. Bisection
    (cronsim only answers "next"), which ends because fires fall on whole seconds."""
    latest, beyond = first, now + _INSTANT
    # Invariant: `latest` is a fire, no fire lies in [beyond, now].
    while beyond - latest > CRON_RESOLUTION:
        middle = latest + (beyond - latest) / 2
        fire = next_cron_fire(expr, timezone, middle - _INSTANT)
        if fire <= now:
            latest = fire
        else:
            beyond = middle
    return latest


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
