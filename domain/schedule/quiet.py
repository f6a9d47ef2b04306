"""Quiet periods: recurring windows in which an endpoint's slots are skipped or slowed
(docs/quiet-periods.md). Pure: when a time is quiet, the window it lies in, the next one.

A window is a cron expression with a duration (`{cron: "0 18 * * 1-5", for: 14h}`: a window
opens at each fire and lasts that long in elapsed time), or days and hours of the wall clock of
its zone (`{days: [sat, sun]}`, `{days: mon-fri, hours: "18:00-08:00"}`: a window opens on each
listed day and ends the next day when its hours cross midnight), or dated days
(`{dates: [2026-12-25]}`, whole days unless hours are given). Wall times are those of the
window's zone, so a window keeps its hours across daylight-saving changes; a time the spring
change skips is read with the offset before the change, as `zoneinfo` does.

Windows that touch or overlap make one window (`window_at`): the governor records one skipped
run per window, whatever their parts.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from cronpilot.domain.errors import InvalidSchedule
from cronpilot.domain.model import Response, Schedule
from cronpilot.domain.schedule.schedule import MAX_SECONDS, latest_cron_fire, next_cron_fire, zone

MINUTES_A_DAY = 24 * 60
_DAY = timedelta(days=1)
_INSTANT = timedelta(microseconds=1)
LONGEST = timedelta(days=366)
"""A quiet window (its touching parts together) lasting longer never ends, for our purpose:
a pause says that better, and the governor must always find a time after it."""
_MAX_PARTS = 2000
"""How many times a window may grow by the parts touching its ends (a window of fires every
5 minutes for 10 minutes over a weekend grows 576 times): more, and it never ends."""
WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
"""Day names in `date.weekday()` order."""


@dataclass(frozen=True, slots=True)
class QuietWindow:
    """One declared window: exactly one of `cron` (with `duration_seconds`), `days` or `dates`,
    or `hours` alone (every day). `hours` are minutes of the day, (start, end); an end at or
    before the start is on the next day. `every_seconds` slows slots to one call per so long
    instead of skipping them."""

    timezone: str = "UTC"
    cron: str | None = None
    duration_seconds: float | None = None
    days: tuple[int, ...] = ()
    """`date.weekday()` numbers: 0 is Monday."""
    hours: tuple[int, int] | None = None
    dates: tuple[date, ...] = ()
    every_seconds: float | None = None

    @property
    def skips(self) -> bool:
        return self.every_seconds is None


@dataclass(frozen=True, slots=True)
class Interval:
    """A stretch of time [start, end), in UTC."""

    start: datetime
    end: datetime

    def holds(self, moment: datetime) -> bool:
        return self.start <= moment < self.end


@dataclass(frozen=True, slots=True)
class QuietSpan(Interval):
    """A quiet window as it happens: its touching parts together, and whether its slots are
    skipped (`every_seconds` None) or slowed (the longest `every` of its parts at that time)."""

    every_seconds: float | None = None

    @property
    def skips(self) -> bool:
        return self.every_seconds is None


SKIPPED = "skipped: quiet period"
"""The message of a quiet window's skipped run."""


def skipped_quietly(windows: tuple[QuietWindow, ...], slot: datetime, now: datetime) -> Response:
    """What stands for the call of a quiet window's first slot (`ScheduleSource.QUIET`): no
    call is made, and the run is recorded skipped (`transitions.finished_run`), saying until
    when the window holds `slot` (the windows as declared now)."""
    span = window_at(windows, slot)
    until = "" if span is None else f" until {span.end.isoformat()}"
    return Response(
        status_code=None,
        error_message=SKIPPED + until,
        started_at=now,
        finished_at=now,
    )


def _wall(day: date, minute: int, timezone: str) -> datetime:
    """`minute` of `day` (24:00 is the next day's midnight) on the zone's wall clock, in UTC."""
    if minute >= MINUTES_A_DAY:
        return _wall(day + _DAY, minute - MINUTES_A_DAY, timezone)
    wall = datetime.combine(day, time(minute // 60, minute % 60), tzinfo=zone(timezone))
    return wall.astimezone(UTC)


def _day_window(window: QuietWindow, day: date) -> Interval:
    start, end = window.hours if window.hours is not None else (0, MINUTES_A_DAY)
    last = day + _DAY if end <= start else day
    return Interval(_wall(day, start, window.timezone), _wall(last, end, window.timezone))


def _opens_on(window: QuietWindow, day: date) -> bool:
    if window.dates:
        return day in window.dates
    return not window.days or day.weekday() in window.days


def _cron_parts(window: QuietWindow, after: datetime) -> Iterator[Interval]:
    """The window's parts opening strictly after `after`, in order."""
    assert window.cron is not None and window.duration_seconds is not None
    length = timedelta(seconds=window.duration_seconds)
    fire = after
    while True:
        try:
            fire = next_cron_fire(window.cron, window.timezone, fire)
        except InvalidSchedule:
            return
        yield Interval(fire, fire + length)


def _containing(window: QuietWindow, moment: datetime) -> list[Interval]:
    """The window's parts that hold `moment`: for a cron window the first and the last (those
    between add nothing to the window they make together)."""
    if window.cron is not None:
        assert window.duration_seconds is not None
        length = timedelta(seconds=window.duration_seconds)
        parts = _cron_parts(window, moment - length)
        first, second = next(parts, None), next(parts, None)
        if first is None or first.start > moment:
            return []
        if second is None or second.start > moment:
            return [first]
        last = latest_cron_fire(window.cron, window.timezone, second.start, moment)
        return [first, Interval(last, last + length)]
    today = moment.astimezone(zone(window.timezone)).date()
    days = (today - _DAY, today)
    return [
        part
        for day in days
        if _opens_on(window, day) and (part := _day_window(window, day)).holds(moment)
    ]


def _next_opening(window: QuietWindow, after: datetime) -> Interval | None:
    """The window's first part opening strictly after `after`; None when none ever does."""
    if window.cron is not None:
        return next(_cron_parts(window, after), None)
    today = after.astimezone(zone(window.timezone)).date()
    if window.dates:
        candidates: Iterable[date] = sorted(day for day in window.dates if day >= today - _DAY)
    else:
        candidates = (today + n * _DAY for n in range(-1, 9))
    for day in candidates:
        if _opens_on(window, day) and (part := _day_window(window, day)).start > after:
            return part
    return None


def _every(windows: Iterable[QuietWindow]) -> float | None:
    """How slots are held in parts of these windows together: skipped if any part skips,
    else slowed to the longest `every`."""
    everies = [window.every_seconds for window in windows]
    if not everies or any(every is None for every in everies):
        return None
    return max(every for every in everies if every is not None)


def window_at(windows: tuple[QuietWindow, ...], moment: datetime) -> QuietSpan | None:
    """The quiet window holding `moment`, its touching parts together; None when `moment` is
    not quiet. Raises `InvalidSchedule` for a window that does not end within `LONGEST`."""
    holding = [(window, part) for window in windows for part in _containing(window, moment)]
    if not holding:
        return None
    start = min(part.start for _, part in holding)
    end = max(part.end for _, part in holding)
    parts = {window for window, _ in holding}
    for _ in range(_MAX_PARTS):
        earlier = [(w, p) for w in windows for p in _containing(w, start - _INSTANT)]
        later = [(w, p) for w in windows for p in _containing(w, end)]
        if not earlier and not later:
            return QuietSpan(start, end, _every(parts))
        start = min([start, *(part.start for _, part in earlier)])
        end = max([end, *(part.end for _, part in later)])
        parts |= {window for window, _ in earlier + later}
        if end - start > LONGEST:
            break
    raise InvalidSchedule(_describe(windows), "never ends: quiet without a break for over a year")


def next_window(windows: tuple[QuietWindow, ...], now: datetime) -> QuietSpan | None:
    """The quiet window in force at `now`, or else the next one to open; None when none
    ever opens again."""
    current = window_at(windows, now)
    if current is not None:
        return current
    openings = [part for window in windows if (part := _next_opening(window, now)) is not None]
    if not openings:
        return None
    return window_at(windows, min(part.start for part in openings))


def _describe(windows: tuple[QuietWindow, ...]) -> str:
    return ", ".join(describe(window) for window in windows)


def describe(window: QuietWindow) -> str:
    """A window as a person reads it (`cron 0 18 * * 1-5 for 14h`, `sat,sun 18:00-08:00`)."""
    if window.cron is not None:
        return f"cron {window.cron} for {window.duration_seconds:g}s"
    if window.dates:
        what = ",".join(day.isoformat() for day in window.dates)
    else:
        what = ",".join(WEEKDAYS[day] for day in window.days) or "every day"
    if window.hours is not None:
        what += " " + "-".join(clock_text(minute) for minute in window.hours)
    return what


def clock_text(minute: int) -> str:
    """A minute of the day as `HH:MM`."""
    return f"{minute // 60:02d}:{minute % 60:02d}"


def check_windows(windows: tuple[QuietWindow, ...], since: datetime) -> None:
    """Raise `InvalidSchedule` for a window that never ends: each window's
    first part from `since` (from its first date for dated ones) must end within `LONGEST`."""
    for window in windows:
        start = since
        if window.dates:
            start = datetime.combine(min(window.dates), time(), tzinfo=zone(window.timezone))
        opening = _next_opening(window, start - _INSTANT)
        if opening is not None:
            window_at(windows, opening.start)


def _grid_from(schedule: Schedule, slot: datetime, moment: datetime) -> datetime:
    """The first slot of the baseline's grid through `slot` at or after `moment`."""
    if schedule.cron is not None:
        return next_cron_fire(schedule.cron, schedule.timezone, moment - _INSTANT)
    assert schedule.interval_seconds is not None
    period = timedelta(seconds=schedule.interval_seconds)
    return slot + -((slot - moment) // period) * period


def check_coverage(windows: tuple[QuietWindow, ...], schedule: Schedule, since: datetime) -> None:
    """Raise `InvalidSchedule` when windows that skip hold every slot of the baseline (an
    interval's grid from `since`) for ten years: the endpoint would never be called."""
    if schedule.after_upstreams:
        return
    horizon = since + timedelta(seconds=MAX_SECONDS)
    slot = _grid_from(schedule, since, since + _INSTANT)
    while slot <= horizon:
        span = window_at(windows, slot)
        if span is None or not span.skips:
            return
        slot = _grid_from(schedule, slot, span.end)
    raise InvalidSchedule(_describe(windows), "covers every slot of the schedule")
