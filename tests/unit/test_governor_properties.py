"""Invariants of `plan_next_run` over generated endpoints (design, "Governor")."""

from __future__ import annotations

import copy
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from cronpilot.domain.model import (
    DEFAULT_CATCH_UP_WINDOW_SECONDS,
    DEFAULT_FLOOR_SECONDS,
    CatchUp,
    Endpoint,
    EndpointSpec,
    IntervalHint,
    NextRun,
    OneShotHint,
    Pause,
    Schedule,
    ScheduleSource,
)
from cronpilot.domain.schedule.governor import (
    MAX_LATE_GRACE,
    catch_up,
    late_grace,
    on_grid,
    plan_next_run,
)
from cronpilot.domain.schedule.schedule import next_cron_fire, parse_cron

ZONES = [
    "UTC",
    "Europe/Paris",
    "America/New_York",
    "Asia/Kolkata",
    "Australia/Lord_Howe",  # a 30-minute DST shift
    "Pacific/Chatham",
]
CRONS = [
    "* * * * *",
    "*/5 * * * *",
    "0 * * * *",
    "*/30 * * * *",
    "30 2 * * *",
    "15 1-3 * * *",
    "0 9 * * mon-fri",
    "0 0 1 * *",
    "*/20 * * * * *",
    "0 */2 * * *",
    "0 9 * * 7",
    "0 0 L * *",
    "@daily",
]
# The 2026 DST changes of the zones above: random instants in two years would rarely hit one.
DST_CHANGES = [
    datetime(2026, 3, 29, 1, tzinfo=UTC),  # Paris
    datetime(2026, 10, 25, 1, tzinfo=UTC),
    datetime(2026, 3, 8, 7, tzinfo=UTC),  # New York
    datetime(2026, 11, 1, 6, tzinfo=UTC),
    datetime(2026, 4, 4, 15, tzinfo=UTC),  # Lord Howe
    datetime(2026, 10, 3, 15, 30, tzinfo=UTC),
    datetime(2026, 4, 4, 14, tzinfo=UTC),  # Chatham
    datetime(2026, 9, 26, 14, tzinfo=UTC),
]
DAY = 86_400.0

PROPERTY = settings(max_examples=150, deadline=None)
MICROSECOND = timedelta(microseconds=1)
S = ScheduleSource

Offsets = st.SearchStrategy[timedelta]


def offsets(low: float, high: float) -> Offsets:
    """Offsets in seconds, with exact zero and whole seconds drawn often (boundaries)."""
    seconds = st.one_of(
        st.just(0.0),
        st.integers(int(low), int(high)).map(float),
        st.floats(low, high, allow_nan=False),
    )
    return seconds.map(lambda s: timedelta(seconds=s))


NOWS = st.one_of(
    st.datetimes(datetime(2026, 1, 1), datetime(2027, 12, 31), timezones=st.just(UTC)),
    st.builds(lambda at, off: at + off, st.sampled_from(DST_CHANGES), offsets(-4 * 3600, 4 * 3600)),
)
SCHEDULES = st.one_of(
    st.builds(Schedule, interval_seconds=st.floats(0.5, 7 * DAY), timezone=st.sampled_from(ZONES)),
    st.builds(Schedule, cron=st.sampled_from(CRONS), timezone=st.sampled_from(ZONES)),
)


@st.composite
def clamps(draw: st.DrawFn) -> tuple[float | None, float | None]:
    low, high = sorted(draw(st.lists(st.floats(0.001, 3 * DAY), min_size=2, max_size=2)))
    return draw(st.sampled_from([low, None])), draw(st.sampled_from([high, None]))


ENDS = offsets(-DAY, DAY)
STALE_ENDS = offsets(-DAY, 0)
HINT_SECONDS = st.floats(0.5, DAY)
SHOT_OFFSETS = offsets(-DAY, 2 * DAY)
LAST_SLOT_OFFSETS = st.none() | st.just(timedelta(0)) | offsets(-30 * DAY, DAY)
RETRY_AFTER_OFFSETS = st.none() | offsets(-DAY, 2 * DAY)
FAILURES = st.integers(0, 12) | st.integers(0, 10**6)
FLOORS = st.just(DEFAULT_FLOOR_SECONDS) | st.floats(0.001, 3600)
JITTERS = st.none() | st.floats(0.001, DAY)
WINDOWS = st.just(DEFAULT_CATCH_UP_WINDOW_SECONDS) | st.just(0.0) | st.floats(0, 2 * DAY)


@dataclass(frozen=True)
class Case:
    now: datetime
    endpoint: Endpoint


def interval_hint(draw: st.DrawFn, now: datetime, ends: Offsets) -> IntervalHint:
    return IntervalHint(draw(HINT_SECONDS), now + draw(ends), "test")


def oneshot_hint(draw: st.DrawFn, now: datetime, ends: Offsets) -> OneShotHint:
    return OneShotHint(now + draw(SHOT_OFFSETS), now + draw(ends), "test")


def timed_pause(draw: st.DrawFn, now: datetime, ends: Offsets) -> Pause:
    return Pause("test", now + draw(ends))


@st.composite
def cases(draw: st.DrawFn) -> Case:
    now = draw(NOWS)
    min_s, max_s = draw(clamps())
    spec = EndpointSpec(
        name="probe",
        url="https://example.com/probe",
        schedule=draw(SCHEDULES),
        min_interval_seconds=min_s,
        max_interval_seconds=max_s,
        jitter_seconds=draw(JITTERS),
        catch_up=draw(st.sampled_from(CatchUp)),
        catch_up_window_seconds=draw(WINDOWS),
        floor_seconds=draw(FLOORS),
    )
    last_slot = draw(LAST_SLOT_OFFSETS)
    retry_after = draw(RETRY_AFTER_OFFSETS)
    pause = None
    if draw(st.booleans()):
        pause = timed_pause(draw, now, ENDS) if draw(st.booleans()) else Pause("until resumed")
    endpoint = Endpoint(
        id="ep-1",
        job_id="job-1",
        job_name="job",
        spec=spec,
        interval_hint=interval_hint(draw, now, ENDS) if draw(st.booleans()) else None,
        oneshot_hint=oneshot_hint(draw, now, ENDS) if draw(st.booleans()) else None,
        pause=pause,
        failure_count=draw(FAILURES),
        last_slot_at=None if last_slot is None else now + last_slot,
        retry_after_at=None if retry_after is None else now + retry_after,
    )
    return Case(now, endpoint)


def pause_is_active(endpoint: Endpoint, now: datetime) -> bool:
    pause = endpoint.pause
    return pause is not None and (pause.until is None or pause.until > now)


def floor_at(endpoint: Endpoint) -> datetime | None:
    """The floor after the last slot, from the latest moment its jittered call may have gone."""
    if endpoint.last_slot_at is None:
        return None
    spec = endpoint.spec
    return endpoint.last_slot_at + timedelta(
        seconds=spec.floor_seconds + (spec.jitter_seconds or 0)
    )


def lowest(case: Case) -> datetime:
    """The latest time the floor and the min clamp may plan a call at."""
    spec = case.endpoint.spec
    bounds = [case.now + timedelta(seconds=spec.min_interval_seconds or 0)]
    floor = floor_at(case.endpoint)
    return max([*bounds, floor] if floor is not None else bounds)


def min_bound(case: Case) -> datetime | None:
    """The earliest time the min clamp allows: `min_interval` after the previous slot, or after
    `now` when there is none or it lies ahead (a call too soon waits the minimum from `now`)."""
    least = case.endpoint.spec.min_interval_seconds
    if least is None:
        return None
    last = case.endpoint.last_slot_at
    start = case.now if last is None else min(last, case.now)
    return start + timedelta(seconds=least)


def clamped_times(case: Case) -> set[datetime]:
    """Where the floor or the min clamp put a call they move: on the floor, or the minimum
    after `now`, whichever is later (the min clamp leaves a floored call that is the minimum
    after the previous slot where it is)."""
    spec = case.endpoint.spec
    floor = floor_at(case.endpoint)
    least = case.now + timedelta(seconds=spec.min_interval_seconds or 0)
    return {least if floor is None else max(least, floor), *([floor] if floor else [])}


@PROPERTY
@given(cases())
def test_a_grid_slot_the_minimum_after_the_last_is_not_clamped(case: Case) -> None:
    """An interval equal to the minimum stays on its grid: a call planned the minimum (or more)
    after the previous slot (a baseline slot, a hint) is left where it is, not moved to
    `min_interval` after `now`."""
    endpoint, now = case.endpoint, case.now
    least = endpoint.spec.min_interval_seconds
    unclamped = plan_next_run(
        replace(endpoint, spec=replace(endpoint.spec, min_interval_seconds=None)), now
    )
    planned = plan_next_run(endpoint, now)

    last = endpoint.last_slot_at
    # A timed pause plans afresh from its end, as a new endpoint: no previous slot there.
    if pause_is_active(endpoint, now):
        return
    if least is not None and last is not None and unclamped.at is not None:
        spaced = unclamped.at >= last + timedelta(seconds=least)
        assert planned == unclamped or not spaced


@PROPERTY
@given(cases())
def test_never_in_the_past_and_none_only_when_paused_for_good(case: Case) -> None:
    planned = plan_next_run(case.endpoint, case.now)

    if planned.at is None:
        assert case.endpoint.pause is not None
        assert case.endpoint.pause.until is None
    else:
        assert planned.at >= case.now


@PROPERTY
@given(cases())
def test_stays_within_the_clamps_unless_paused(case: Case) -> None:
    planned = plan_next_run(case.endpoint, case.now)
    spec = case.endpoint.spec

    if planned.source is not ScheduleSource.PAUSED:
        assert planned.at is not None
        low = min_bound(case)
        if low is not None:
            assert planned.at >= low
        if spec.max_interval_seconds is not None:
            assert planned.at <= case.now + timedelta(seconds=spec.max_interval_seconds)


@PROPERTY
@given(cases())
def test_source_is_paused_iff_a_pause_is_active(case: Case) -> None:
    planned = plan_next_run(case.endpoint, case.now)

    assert (planned.source is ScheduleSource.PAUSED) == pause_is_active(case.endpoint, case.now)


@PROPERTY
@given(cases(), st.data())
def test_expired_hints_and_pauses_change_nothing(case: Case, data: st.DataObject) -> None:
    """Fill every empty hint and pause slot with one that ended at or before `now`."""
    endpoint, now = case.endpoint, case.now
    cluttered = replace(
        endpoint,
        interval_hint=endpoint.interval_hint or interval_hint(data.draw, now, STALE_ENDS),
        oneshot_hint=endpoint.oneshot_hint or oneshot_hint(data.draw, now, STALE_ENDS),
        pause=endpoint.pause or timed_pause(data.draw, now, STALE_ENDS),
        retry_after_at=endpoint.retry_after_at or now + data.draw(STALE_ENDS),
    )

    assert plan_next_run(cluttered, now) == plan_next_run(endpoint, now)


@PROPERTY
@given(cases())
def test_same_input_same_output(case: Case) -> None:
    first = plan_next_run(case.endpoint, case.now)
    parse_cron.cache_clear()

    again = plan_next_run(copy.deepcopy(case.endpoint), copy.deepcopy(case.now))

    assert again == first


@PROPERTY
@given(cases())
def test_a_fresh_one_shot_is_never_beaten_by_a_later_time(case: Case) -> None:
    """Unless the endpoint asked, with `Retry-After`, not to be called before a later time."""
    endpoint, now = case.endpoint, case.now
    shot = endpoint.oneshot_hint
    planned = plan_next_run(endpoint, now)

    if shot is not None and shot.expires_at > now and not pause_is_active(endpoint, now):
        assert planned.at is not None
        low = lowest(case)
        held = endpoint.retry_after_at or low
        assert planned.at <= max(shot.at, low, held)


@PROPERTY
@given(cases())
def test_no_run_before_a_retry_after_unless_the_max_clamp_comes_first(case: Case) -> None:
    endpoint, now = case.endpoint, case.now
    retry_after = endpoint.retry_after_at
    planned = plan_next_run(endpoint, now)

    if retry_after is not None and planned.source is not ScheduleSource.PAUSED:
        assert planned.at is not None
        high = endpoint.spec.max_interval_seconds
        assert planned.at >= min(retry_after, now + timedelta(seconds=high or 10 * DAY))
        if planned.source is ScheduleSource.RETRY_AFTER:
            assert planned.at == retry_after


@PROPERTY
@given(cases())
def test_a_retry_after_never_brings_a_run_earlier(case: Case) -> None:
    endpoint, now = case.endpoint, case.now
    planned = plan_next_run(endpoint, now)
    unheld = plan_next_run(replace(endpoint, retry_after_at=None), now)

    if planned.at is not None and unheld.at is not None:
        assert planned.at >= unheld.at


@PROPERTY
@given(cases())
def test_a_clamped_source_sits_on_its_clamp(case: Case) -> None:
    planned = plan_next_run(case.endpoint, case.now)
    spec = case.endpoint.spec

    if planned.source is ScheduleSource.CLAMPED_MIN:
        assert planned.at in clamped_times(case)
        # A baseline slot pushed later keeps its grid time.
        assert planned.slot is None or planned.slot < planned.at
    if planned.source is ScheduleSource.CLAMPED_MAX:
        assert planned == NextRun(
            case.now + timedelta(seconds=spec.max_interval_seconds or 0), planned.source
        )


@PROPERTY
@given(cases())
def test_never_closer_than_the_floor_to_the_last_slot(case: Case) -> None:
    """Whatever the schedule, hints and min clamp say; only a pause or the max clamp (never
    below the floor in a declared endpoint) plan otherwise."""
    planned = plan_next_run(case.endpoint, case.now)
    floor = floor_at(case.endpoint)

    if floor is not None and planned.source not in (S.PAUSED, S.CLAMPED_MAX):
        assert planned.at is not None
        assert planned.at >= floor


@PROPERTY
@given(cases())
def test_a_baseline_slot_stays_on_its_grid(case: Case) -> None:
    """Jitter, catch-up, the floor and the min clamp move the call, never the slot: an
    interval's slots are whole periods after the last one, a cron's slots are fire times."""
    planned = plan_next_run(case.endpoint, case.now)
    schedule, last = case.endpoint.spec.schedule, case.endpoint.last_slot_at

    if on_grid(planned.source, planned.slot):
        assert planned.at is not None
        slot = planned.slot or planned.at
        if schedule.cron is not None:
            assert next_cron_fire(schedule.cron, schedule.timezone, slot - MICROSECOND) == slot
        elif last is not None:
            assert schedule.interval_seconds is not None
            assert (slot - last) % timedelta(seconds=schedule.interval_seconds) == timedelta(0)


@PROPERTY
@given(cases())
def test_a_call_off_its_slot_is_jitter_a_catch_up_now_or_a_clamp(case: Case) -> None:
    planned = plan_next_run(case.endpoint, case.now)
    jitter = case.endpoint.spec.jitter_seconds

    # A timed pause plans, off the grid or not, what the endpoint plans when the pause ends.
    if planned.slot is not None and planned.source is not S.PAUSED:
        # A clamped slot keeps its grid time.
        assert planned.source in (S.BASELINE, S.CLAMPED_MIN)
        assert planned.at is not None and planned.at > planned.slot
        jittered = jitter is not None and planned.at - planned.slot < timedelta(seconds=jitter)
        clamped = planned.source is S.CLAMPED_MIN and planned.at in clamped_times(case)
        assert jittered or clamped or planned.at == case.now


@PROPERTY
@given(cases())
def test_a_missed_slot_runs_only_by_the_catch_up_rule(case: Case) -> None:
    """`none` runs no slot whose call is more than its grace late; `one` none older than the
    window."""
    planned = plan_next_run(case.endpoint, case.now)
    spec = case.endpoint.spec

    if on_grid(planned.source, planned.slot):
        assert planned.at is not None
        slot = planned.slot or planned.at
        grace = late_grace(following(case.endpoint, slot) - slot)
        window = timedelta(seconds=spec.catch_up_window_seconds)
        late_by = grace if spec.catch_up is CatchUp.NONE else max(grace, window)
        assert slot >= case.now - late_by - timedelta(seconds=spec.jitter_seconds or 0)


def following(endpoint: Endpoint, slot: datetime) -> datetime:
    """The baseline's grid slot after `slot`."""
    schedule = endpoint.spec.schedule
    if schedule.cron is not None:
        return next_cron_fire(schedule.cron, schedule.timezone, slot)
    assert schedule.interval_seconds is not None
    return slot + timedelta(seconds=schedule.interval_seconds)


@PROPERTY
@given(cases(), offsets(0, 2 * DAY))
def test_a_claim_runs_no_missed_slot_against_the_catch_up_rule(
    case: Case, delay: timedelta
) -> None:
    """Whatever moved the planned call of a baseline slot (jitter, the floor, the min clamp), a
    claim `delay` after it runs the slot, or a later one of its grid, only by the catch-up
    rule; a call planned by anything else (hints, backoff, Retry-After, the max clamp) is no
    slot and runs as planned."""
    endpoint, now = case.endpoint, case.now
    planned = plan_next_run(endpoint, now)
    if planned.at is None:
        return
    stored = replace(
        endpoint,
        next_run_at=planned.at,
        next_slot_at=planned.slot,
        next_run_source=planned.source,
    )
    claimed = planned.at + delay

    moved = catch_up(stored, claimed)

    if not on_grid(planned.source, planned.slot):
        assert moved is None
        return
    jitter = timedelta(seconds=endpoint.spec.jitter_seconds or 0)
    if moved is None:
        # Late from the planned call, or from the slot's own call (jitter included) where the
        # min clamp planned it a little before that: a daily slot whose jitter is 1.8 s,
        # clamped to its second 0 and claimed 61 s later, is 59.2 s late and still runs (found
        # by this property).
        late = claimed - max(planned.at, (planned.slot or planned.at) + jitter)
    elif moved.at is not None and moved.at <= claimed:
        late = claimed - (moved.slot or moved.at) - jitter
    else:
        return
    window = timedelta(seconds=endpoint.spec.catch_up_window_seconds)
    ceiling = (
        MAX_LATE_GRACE if endpoint.spec.catch_up is CatchUp.NONE else max(MAX_LATE_GRACE, window)
    )
    assert late <= ceiling


CALENDAR_END = datetime.max.replace(tzinfo=UTC)
FAR = 10 * 365 * DAY


@st.composite
def near_the_calendar_end(draw: st.DrawFn) -> tuple[Endpoint, datetime]:
    """An interval endpoint with clamps, hints, backoff and a pause of up to ten years each,
    seen at a time anywhere up to the calendar's last day."""
    now = CALENDAR_END - draw(offsets(0, 2 * FAR))
    # Ends of hints and pauses up to ten years ahead, the last ones on the calendar's last day.
    ends = offsets(0, FAR).map(lambda ahead: now + min(ahead, CALENDAR_END - now))
    low = draw(st.none() | st.floats(1, FAR))
    spec = EndpointSpec(
        name="probe",
        url="https://example.com/probe",
        schedule=Schedule(interval_seconds=draw(st.floats(1, FAR))),
        min_interval_seconds=low,
        max_interval_seconds=None if low is None else draw(st.floats(low, FAR)),
        jitter_seconds=draw(st.none() | st.floats(1, FAR)),
    )
    hint = IntervalHint(draw(st.floats(1, FAR)), draw(ends), "far")
    endpoint = Endpoint(
        id="ep-1",
        job_id="job-1",
        job_name="job",
        spec=spec,
        last_slot_at=draw(st.none() | st.just(now - draw(offsets(0, FAR)))),
        failure_count=draw(st.integers(0, 80)),
        interval_hint=draw(st.none() | st.just(hint)),
        pause=draw(st.none() | st.just(Pause("far", draw(ends)))),
    )
    return endpoint, now


@PROPERTY
@given(near_the_calendar_end())
def test_a_plan_past_the_calendar_end_is_none_never_an_overflow(
    case: tuple[Endpoint, datetime],
) -> None:
    endpoint, now = case
    planned = plan_next_run(endpoint, now)
    assert planned.at is None or planned.at >= now
