"""Quiet windows against the cron oracle: the slots the governor keeps for a cron baseline are
cronsim's fires minus those inside a window, both computed here independently of
`domain.schedule.quiet` (wall times read with zoneinfo, window crons walked with cronsim), across
daylight-saving changes; each window's first slot is its one skipped run.

Baselines and window edges stay out of the small hours, where the zones below change their
clocks: there cronpilot's own DST rules for cron apply (test_cron_references.py proves them),
which the oracle does not reproduce.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, date, datetime, time, timedelta
from itertools import pairwise
from zoneinfo import ZoneInfo

from cronsim import CronSim
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from cronpilot.domain.errors import InvalidSchedule
from cronpilot.domain.model import Endpoint, EndpointSpec, Schedule, ScheduleSource
from cronpilot.domain.schedule.governor import plan_next_run
from cronpilot.domain.schedule.quiet import QuietWindow, check_coverage, check_windows, window_at

ZONES = ["UTC", "Europe/Paris", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe"]
BASELINES = [
    "*/20 6-23 * * *",
    "0 9 * * mon-fri",
    "30 8,12,18 * * *",
    "*/30 7-22 * * *",
    "15 5-23/2 * * *",
    "0 12 * * *",
]
WINDOW_CRONS = ["0 18 * * 1-5", "30 12 * * *", "0 22 * * 0,6", "0 7 * * *"]
EDGE_HOURS = [0, 6, 7, 8, 9, 12, 13, 17, 18, 19, 22, 23, 24]
STARTS = [
    datetime(2026, 3, 6, tzinfo=UTC),  # the spring changes of New York and Paris ahead
    datetime(2026, 3, 26, tzinfo=UTC),
    datetime(2026, 4, 2, tzinfo=UTC),  # Lord Howe's autumn
    datetime(2026, 10, 22, tzinfo=UTC),
    datetime(2026, 10, 30, tzinfo=UTC),
    datetime(2026, 12, 22, tzinfo=UTC),
]
SPAN = timedelta(days=5)
PROPERTY = settings(
    max_examples=25,
    deadline=None,
    # Drawing a case checks it as apply would, which a loaded machine makes slow.
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


@st.composite
def windows(draw: st.DrawFn, timezone: str) -> QuietWindow:
    kind = draw(st.sampled_from(["days", "hours", "cron", "dates"]))
    if kind == "cron":
        hours = draw(st.sampled_from([1, 2, 5, 14]))
        return QuietWindow(
            timezone=timezone,
            cron=draw(st.sampled_from(WINDOW_CRONS)),
            duration_seconds=hours * 3600.0,
        )
    start, end = draw(st.lists(st.sampled_from(EDGE_HOURS), min_size=2, max_size=2, unique=True))
    hours_of_day = (start * 60, end * 60) if start != 24 and draw(st.booleans()) else None
    if kind == "hours":
        return QuietWindow(timezone=timezone, hours=hours_of_day or (start % 24 * 60, end * 60))
    if kind == "dates":
        first = date(2026, 3, 1)
        offsets = draw(st.lists(st.integers(0, 310), min_size=1, max_size=12, unique=True))
        dates = tuple(sorted(first + timedelta(days=n) for n in offsets))
        return QuietWindow(timezone=timezone, dates=dates, hours=hours_of_day)
    days = draw(st.lists(st.integers(0, 6), min_size=1, max_size=3, unique=True))
    return QuietWindow(timezone=timezone, days=tuple(sorted(days)), hours=hours_of_day)


def oracle_fires(cron: str, timezone: str, start: datetime, end: datetime) -> list[datetime]:
    """cronsim's fires on the zone's wall clock, placed in real time by zoneinfo."""
    tz = ZoneInfo(timezone)
    walk = CronSim(cron, start.astimezone(tz).replace(tzinfo=None))
    fires = []
    for wall in walk:
        fire = wall.replace(tzinfo=tz).astimezone(UTC)
        if fire > end:
            return fires
        if fire > start:
            fires.append(fire)
    return fires


def _inside_day_window(window: QuietWindow, fire: datetime) -> bool:
    """On the wall clock: the fire's day (or the day before, for hours crossing midnight) opens
    the window and its time of day is within the hours."""
    local = fire.astimezone(ZoneInfo(window.timezone))
    minute = local.hour * 60 + local.minute

    def opens(day: date) -> bool:
        return (
            day in window.dates if window.dates else not window.days or day.weekday() in window.days
        )

    start, end = window.hours or (0, 24 * 60)
    today, yesterday = local.date(), local.date() - timedelta(days=1)
    if end > start:
        return opens(today) and start <= minute < end
    return (opens(today) and minute >= start) or (opens(yesterday) and minute < end)


def _inside_cron_window(window: QuietWindow, fire: datetime) -> bool:
    assert window.cron is not None and window.duration_seconds is not None
    length = timedelta(seconds=window.duration_seconds)
    since = fire - length - timedelta(days=1)
    return any(
        opened <= fire < opened + length
        for opened in oracle_fires(window.cron, window.timezone, since, fire)
    )


def inside(quiet: tuple[QuietWindow, ...], fire: datetime) -> bool:
    return any(
        _inside_cron_window(w, fire) if w.cron is not None else _inside_day_window(w, fire)
        for w in quiet
    )


def governed(spec: EndpointSpec, start: datetime, end: datetime) -> list[tuple[datetime, str]]:
    """The slots the governor plans one after the other from `start` (each run at its time),
    with their sources, up to `end`."""
    endpoint = Endpoint(id="e", job_id="j", job_name="j", spec=spec)
    now, slots = start, []
    while True:
        planned = plan_next_run(endpoint, now)
        assert planned.at is not None and planned.at >= now
        slot = planned.slot or planned.at
        if slot > end:
            return slots
        slots.append((slot, planned.source.value))
        endpoint = replace(endpoint, last_slot_at=slot)
        now = planned.at


@st.composite
def cases(draw: st.DrawFn) -> tuple[EndpointSpec, datetime]:
    timezone = draw(st.sampled_from(ZONES))
    quiet = tuple(draw(st.lists(windows(timezone), min_size=1, max_size=3)))
    schedule = Schedule(cron=draw(st.sampled_from(BASELINES)), timezone=timezone)
    start = draw(st.sampled_from(STARTS)) + timedelta(minutes=draw(st.integers(0, 3 * 1440)))
    try:
        # What apply refuses: a window without end, windows holding every slot.
        check_windows(quiet, start)
        check_coverage(quiet, schedule, start)
    except InvalidSchedule:
        assume(False)
    return EndpointSpec(name="e", url="http://x", schedule=schedule, quiet=quiet), start


@PROPERTY
@given(cases())
def test_kept_slots_are_the_oracles_fires_outside_every_window(
    case: tuple[EndpointSpec, datetime],
) -> None:
    spec, start = case
    end = start + SPAN
    assert spec.schedule.cron is not None
    fires = oracle_fires(spec.schedule.cron, spec.schedule.timezone, start, end)
    expected = [fire for fire in fires if not inside(spec.quiet, fire)]
    slots = governed(spec, start, end)
    assert [slot for slot, source in slots if source == ScheduleSource.BASELINE] == expected
    skipped = [slot for slot, source in slots if source == ScheduleSource.QUIET]
    assert set(skipped) <= set(fires)
    assert all(inside(spec.quiet, slot) for slot in skipped)
    # One skipped run per window: the first fire in it.
    spans = [window_at(spec.quiet, slot) for slot in skipped]
    assert len({(s.start, s.end) for s in spans if s is not None}) == len(skipped)
    for slot, span in zip(skipped, spans, strict=True):
        assert span is not None
        assert not any(span.start <= fire < slot for fire in fires)


@PROPERTY
@given(cases(), st.sampled_from([3600.0, 7200.0]))
def test_a_slowing_window_keeps_oracle_fires_at_least_every_apart(
    case: tuple[EndpointSpec, datetime], every: float
) -> None:
    spec, start = case
    slow = tuple(replace(window, every_seconds=every) for window in spec.quiet)
    spec = replace(spec, quiet=slow)
    end = start + SPAN
    assert spec.schedule.cron is not None
    fires = oracle_fires(spec.schedule.cron, spec.schedule.timezone, start, end)
    slots = governed(spec, start, end)
    kept = [slot for slot, _ in slots]
    assert all(source == ScheduleSource.BASELINE for _, source in slots)
    assert set(kept) <= set(fires)
    # Every fire outside the windows is kept; inside them, calls are `every` apart at least.
    assert [f for f in fires if not inside(slow, f)] == [s for s in kept if not inside(slow, s)]
    for previous, slot in pairwise(kept):
        if inside(slow, slot):
            assert slot - previous >= timedelta(seconds=every)


def test_a_weeknight_window_holds_the_wall_clock_across_the_spring_change() -> None:
    paris = ZoneInfo("Europe/Paris")
    quiet = (QuietWindow(timezone="Europe/Paris", days=(4,), hours=(18 * 60, 8 * 60)),)
    # Friday 27 March 2026 18:00 → Saturday 28 March 08:00; the clocks change on the 29th.
    span = window_at(quiet, datetime.combine(date(2026, 3, 27), time(20), paris))
    assert span is not None
    assert span.start.astimezone(paris).hour == 18
    assert span.end.astimezone(paris).hour == 8
    later = window_at(quiet, datetime.combine(date(2026, 4, 3), time(20), paris))
    assert later is not None and later.start.astimezone(paris).hour == 18
    assert later.start - span.start == timedelta(days=7, hours=-1)
