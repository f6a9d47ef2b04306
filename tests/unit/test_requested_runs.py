"""Runs asked for by hand, decided purely: a backfill's slots and pace, a manual run, and what a
queued run's end does to the schedule (nothing)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from cronpilot.domain.errors import InvalidRunRequest
from cronpilot.domain.model import Endpoint, ErrorKind, OneShotHint, RunStatus, RunTrigger
from cronpilot.domain.runs.requested_runs import (
    MAX_SLOTS,
    backfill_runs,
    backfill_slots,
    manual_run,
)
from cronpilot.domain.runs.transitions import (
    abandoned_run,
    after_reap,
    after_run,
    after_slot,
    queued_run,
)

MakeEndpoint = Callable[..., Endpoint]
NOW = datetime(2030, 4, 2, 12, 0, tzinfo=UTC)
WHO = "cli:ann@web-1"


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def test_cron_slots_are_the_fire_times_in_the_endpoints_zone_across_dst(
    make_endpoint: MakeEndpoint,
) -> None:
    paris = make_endpoint(cron="0 3 * * *", timezone="Europe/Paris")

    # Naive times are Paris time; the clocks go forward on 2030-03-31 (CET to CEST).
    slots = backfill_slots(paris, datetime(2030, 3, 30), datetime(2030, 4, 1, 3, 0), NOW)

    assert slots == [utc("2030-03-30 02:00"), utc("2030-03-31 01:00"), utc("2030-04-01 01:00")]


def test_times_with_an_offset_are_absolute_and_both_ends_are_included(
    make_endpoint: MakeEndpoint,
) -> None:
    paris = make_endpoint(cron="0 3 * * *", timezone="Europe/Paris")

    slots = backfill_slots(paris, utc("2030-03-30 02:00"), utc("2030-03-31 01:00"), NOW)

    assert slots == [utc("2030-03-30 02:00"), utc("2030-03-31 01:00")]


def test_interval_slots_lie_on_the_grid_through_the_last_slot(make_endpoint: MakeEndpoint) -> None:
    anchored = make_endpoint(interval=60, last_slot_at=utc("2030-04-02 11:30:10"))
    fresh = make_endpoint(interval=60)

    start, end = utc("2030-04-02 11:00"), utc("2030-04-02 11:03")
    assert backfill_slots(anchored, start, end, NOW) == [
        utc("2030-04-02 11:00:10"),
        utc("2030-04-02 11:01:10"),
        utc("2030-04-02 11:02:10"),
    ]
    assert backfill_slots(fresh, start, end, NOW) == [
        start,
        start + timedelta(seconds=60),
        start + timedelta(seconds=120),
        end,
    ]


def test_slots_after_now_are_left_to_the_schedule(make_endpoint: MakeEndpoint) -> None:
    endpoint = make_endpoint(interval=3600)

    slots = backfill_slots(endpoint, NOW - timedelta(hours=2), NOW + timedelta(days=3), NOW)

    assert slots == [NOW - timedelta(hours=2), NOW - timedelta(hours=1), NOW]


@pytest.mark.parametrize(
    ("start", "end", "fields", "message"),
    [
        (NOW, NOW - timedelta(days=1), {}, "is after --to"),
        (NOW + timedelta(seconds=1), NOW + timedelta(days=1), {}, "is in the future"),
        (NOW - timedelta(days=3660), NOW, {}, "more than ten years ago"),
        (NOW - timedelta(days=1), NOW, {"interval": 1}, f"more than {MAX_SLOTS} slots"),
        (NOW - timedelta(days=1), NOW, {"interval": None}, "no schedule of its own"),
        (datetime(9999, 12, 31, 23), NOW, {"timezone": "America/New_York"}, "out of range"),
    ],
    ids=["from after to", "future", "too old", "too many", "dag dependant", "out of range"],
)
def test_a_range_that_cannot_be_backfilled_is_refused(
    make_endpoint: MakeEndpoint,
    start: datetime,
    end: datetime,
    fields: dict[str, object],
    message: str,
) -> None:
    endpoint = make_endpoint(**fields)

    with pytest.raises(InvalidRunRequest, match=message) as raised:
        backfill_slots(endpoint, start, end, NOW)
    assert raised.value.ref == "job/probe"


@pytest.mark.parametrize(
    ("min_interval", "floor", "spacing"), [(None, 1.0, 1.0), (5.0, 1.0, 5.0), (None, 3.0, 3.0)]
)
def test_backfill_runs_are_paced_oldest_first(
    make_endpoint: MakeEndpoint, min_interval: float | None, floor: float, spacing: float
) -> None:
    endpoint = make_endpoint(min_interval=min_interval)
    endpoint = replace(endpoint, spec=replace(endpoint.spec, floor_seconds=floor))
    slots = [utc("2030-04-01 10:02"), utc("2030-04-01 10:00"), utc("2030-04-01 10:01")]

    runs = backfill_runs(endpoint, slots, 3, WHO, NOW)

    assert [run.slot_at for run in runs] == sorted(slots)
    assert [run.due_at for run in runs] == [NOW + timedelta(seconds=spacing * i) for i in range(3)]
    for run in runs:
        assert (run.trigger, run.status, run.requested_by, run.started_at, run.worker_id) == (
            RunTrigger.BACKFILL,
            RunStatus.QUEUED,
            WHO,
            NOW,
            "",
        )
    with pytest.raises(InvalidRunRequest, match="3 slots in range have no run, more than 2"):
        backfill_runs(endpoint, slots, 2, WHO, NOW)


def test_a_manual_run_is_due_now_in_a_slot_of_its_own(make_endpoint: MakeEndpoint) -> None:
    run = manual_run(make_endpoint(), WHO, NOW)

    assert (run.trigger, run.status, run.slot_at, run.due_at, run.requested_by) == (
        RunTrigger.MANUAL,
        RunStatus.QUEUED,
        NOW,
        NOW,
        WHO,
    )


def test_a_dependant_filled_from_its_upstreams_cannot_run_alone(
    make_endpoint: MakeEndpoint,
) -> None:
    plain = make_endpoint(interval=None)
    templated = replace(
        plain,
        spec=replace(plain.spec, url="https://example.com/{{ fetch.id }}", depends_on=("fetch",)),
    )

    assert manual_run(plain, WHO, NOW).trigger is RunTrigger.MANUAL
    with pytest.raises(InvalidRunRequest, match="run an upstream instead"):
        manual_run(templated, WHO, NOW)


@pytest.mark.parametrize("succeeded", [True, False, None])
def test_a_queued_runs_end_frees_the_lease_and_nothing_else(
    make_endpoint: MakeEndpoint, succeeded: bool | None
) -> None:
    hint = OneShotHint(NOW - timedelta(seconds=5), NOW + timedelta(hours=1), "soon")
    endpoint = make_endpoint(
        failure_count=2,
        last_slot_at=NOW - timedelta(minutes=10),
        next_run_at=NOW + timedelta(minutes=3),
        oneshot_hint=hint,
        lease_owner="w1",
        lease_until=NOW + timedelta(seconds=30),
    )
    for trigger in (RunTrigger.MANUAL, RunTrigger.BACKFILL):
        run = queued_run(endpoint, trigger, slot_at=NOW, due_at=NOW, requested_by=WHO, now=NOW)

        assert after_run(endpoint, run, succeeded, NOW) == replace(
            endpoint, lease_owner=None, lease_until=None
        )


def test_a_scheduled_runs_end_moves_the_schedule(make_endpoint: MakeEndpoint) -> None:
    endpoint = make_endpoint(failure_count=2, last_slot_at=NOW - timedelta(minutes=1))
    run = replace(manual_run(endpoint, WHO, NOW), trigger=RunTrigger.SCHEDULE)

    assert after_run(endpoint, run, True, NOW) == after_slot(endpoint, NOW, True, NOW)


def test_the_reaper_moves_the_schedule_past_its_own_slots_only(make_endpoint: MakeEndpoint) -> None:
    endpoint = make_endpoint(
        last_slot_at=NOW - timedelta(minutes=2),
        next_run_at=NOW - timedelta(minutes=1),
        lease_owner="w1",
        lease_until=NOW - timedelta(seconds=1),
    )
    manual = manual_run(endpoint, WHO, NOW - timedelta(seconds=30))
    scheduled = replace(manual, trigger=RunTrigger.SCHEDULE, slot_at=NOW - timedelta(minutes=1))
    reaped = [
        abandoned_run(run, ErrorKind.LEASE_EXPIRED, "expired", NOW) for run in (manual, scheduled)
    ]
    freed = replace(endpoint, lease_owner=None, lease_until=None)

    assert after_reap(endpoint, reaped[:1], NOW) == freed
    assert after_reap(endpoint, reaped, NOW) == after_slot(freed, scheduled.slot_at, None, NOW)
    assert after_reap(endpoint, [], NOW).next_run_at == NOW
