"""Jitter: a stable offset per slot, within [0, jitter), never into the next slot; the governor
keeps the slot on its grid and moves only the call."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from cronpilot.domain.model import Endpoint, IntervalHint, NextRun, OneShotHint, ScheduleSource
from cronpilot.domain.runs.transitions import after_slot
from cronpilot.domain.schedule.governor import plan_next_run
from cronpilot.domain.schedule.jitter import jittered

MakeEndpoint = Callable[..., Endpoint]
NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
S = ScheduleSource
ZERO = timedelta(0)


def t(seconds: float) -> datetime:
    return NOW + timedelta(seconds=seconds)


SLOTS = st.datetimes(datetime(2020, 1, 1), datetime(2040, 1, 1), timezones=st.just(UTC))
SPANS = st.timedeltas(timedelta(microseconds=1), timedelta(days=30))
FLOORS = st.timedeltas(ZERO, timedelta(hours=1))
KEYS = st.text(min_size=1, max_size=40)


@settings(max_examples=300)
@given(KEYS, SLOTS, SPANS, SPANS, FLOORS)
def test_the_offset_is_stable_within_the_jitter_and_short_of_the_next_slot(
    key: str, slot: datetime, gap: timedelta, jitter: timedelta, floor: timedelta
) -> None:
    next_slot = slot + gap

    call = jittered(key, slot, next_slot, jitter, floor)

    assert call == jittered(key, slot, next_slot, jitter, floor)
    assert ZERO <= call - slot < jitter
    if call > slot:
        assert call < next_slot - floor
    else:
        assert call == slot


@given(KEYS, SLOTS, SPANS)
def test_no_room_before_the_next_slot_means_no_offset(
    key: str, slot: datetime, gap: timedelta
) -> None:
    assert jittered(key, slot, slot + gap, timedelta(hours=1), gap) == slot


def test_offsets_spread_over_the_jitter() -> None:
    """Different endpoints (and different slots of one endpoint) get different offsets."""
    jitter = timedelta(seconds=10)
    by_endpoint = {jittered(f"ep-{n}", NOW, t(60), jitter, ZERO) - NOW for n in range(50)}
    by_slot = {
        jittered("ep-1", t(60 * n), t(60 * n + 60), jitter, ZERO) - t(60 * n) for n in range(50)
    }

    for offsets in (by_endpoint, by_slot):
        assert len(offsets) == 50
        assert min(offsets) < timedelta(seconds=2)
        assert max(offsets) > timedelta(seconds=8)


def test_jittered_slots_stay_on_the_grid(make_endpoint: MakeEndpoint) -> None:
    """Each run finishes after its jittered call; the next slot is still a whole minute on."""
    endpoint = make_endpoint(interval=60, jitter=10, last_slot_at=NOW)
    calls = []
    for k in range(1, 8):
        planned = plan_next_run(endpoint, endpoint.last_slot_at or NOW)
        assert planned.source is S.BASELINE
        slot = planned.slot or planned.at
        assert slot == t(60 * k)
        assert planned.at is not None and ZERO <= planned.at - slot < timedelta(seconds=10)
        calls.append(planned.at - slot)
        endpoint = after_slot(endpoint, slot, True, planned.at + timedelta(seconds=3))
        assert endpoint.next_slot == t(60 * (k + 1))

    assert len(set(calls)) == len(calls)


def test_a_cron_slot_is_jittered_within_its_gap(make_endpoint: MakeEndpoint) -> None:
    endpoint = make_endpoint(cron="*/5 * * * *", jitter=120, last_slot_at=NOW)

    planned = plan_next_run(endpoint, t(1))

    assert (planned.source, planned.slot) == (S.BASELINE, t(300))
    assert planned.at == jittered(
        "ep-1", t(300), t(600), timedelta(seconds=120), timedelta(seconds=1)
    )


def test_a_slot_whose_jittered_call_is_still_ahead_is_not_missed(
    make_endpoint: MakeEndpoint,
) -> None:
    """The grid slot passed while the previous call ran, but its call time has not come."""
    endpoint = make_endpoint(interval=60, jitter=50, last_slot_at=t(-70), endpoint_id="ep-0")
    call = jittered("ep-0", t(-10), t(50), timedelta(seconds=50), timedelta(seconds=1))
    assert call > NOW, "an endpoint id whose offset for this slot is over 10 s"

    assert plan_next_run(endpoint, NOW) == NextRun(call, S.BASELINE, t(-10))


def test_a_new_interval_endpoint_is_jittered_from_now(make_endpoint: MakeEndpoint) -> None:
    planned = plan_next_run(make_endpoint(interval=60, jitter=30), NOW)

    expected = jittered("ep-1", NOW, t(60), timedelta(seconds=30), timedelta(seconds=1))
    assert planned == NextRun(expected, S.BASELINE, NOW if expected != NOW else None)


def test_hints_are_not_jittered(make_endpoint: MakeEndpoint) -> None:
    """A hint asks for a time; jitter spreads the baseline only."""
    hinted = make_endpoint(
        interval=60,
        jitter=10,
        last_slot_at=t(-100),
        interval_hint=IntervalHint(30, expires_at=t(600), reason="busy"),
    )
    shot = make_endpoint(
        interval=60,
        jitter=10,
        last_slot_at=t(-30),
        oneshot_hint=OneShotHint(t(5), expires_at=t(600), reason="now"),
    )

    assert plan_next_run(hinted, NOW) == NextRun(NOW, S.HINT_INTERVAL)
    assert plan_next_run(shot, NOW) == NextRun(t(5), S.HINT_ONESHOT)
