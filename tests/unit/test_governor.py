"""Table tests for `plan_next_run`: precedence, expiry, clamps, pause, backoff, anchoring."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from cronpilot.domain.model import (
    Endpoint,
    IntervalHint,
    NextRun,
    OneShotHint,
    Pause,
    ScheduleSource,
)
from cronpilot.domain.schedule.governor import BACKOFF_CAP, plan_next_run
from cronpilot.domain.schedule.schedule import MAX_SECONDS

MakeEndpoint = Callable[..., Endpoint]

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
S = ScheduleSource


def t(seconds: float) -> datetime:
    return NOW + timedelta(seconds=seconds)


def interval_hint(seconds: float, expires_in: float = 600) -> IntervalHint:
    return IntervalHint(seconds, expires_at=t(expires_in), reason="test")


def oneshot(at_in: float, expires_in: float = 600) -> OneShotHint:
    return OneShotHint(at=t(at_in), expires_at=t(expires_in), reason="test")


def planned_at(endpoint: Endpoint, now: datetime) -> datetime:
    """The planned time of an endpoint that cannot be paused indefinitely."""
    at = plan_next_run(endpoint, now).at
    assert at is not None
    return at


# Interval 60 s, last slot 10 s ago: the baseline alone says NOW + 50 s.
PRECEDENCE: list[tuple[str, dict[str, Any], float | None, ScheduleSource]] = [
    ("baseline", {}, 50, S.BASELINE),
    ("backoff after one failure doubles", {"failure_count": 1}, 110, S.BACKOFF),
    ("interval hint shorter", {"interval_hint": interval_hint(15)}, 5, S.HINT_INTERVAL),
    ("interval hint longer", {"interval_hint": interval_hint(600)}, 590, S.HINT_INTERVAL),
    (
        "interval hint replaces backoff",
        {"failure_count": 4, "interval_hint": interval_hint(15)},
        5,
        S.HINT_INTERVAL,
    ),
    ("one-shot earlier wins", {"oneshot_hint": oneshot(20)}, 20, S.HINT_ONESHOT),
    ("one-shot later loses", {"oneshot_hint": oneshot(100)}, 50, S.BASELINE),
    ("one-shot in the past fires now", {"oneshot_hint": oneshot(-30)}, 0, S.HINT_ONESHOT),
    (
        "one-shot beats backoff",
        {"failure_count": 2, "oneshot_hint": oneshot(30)},
        30,
        S.HINT_ONESHOT,
    ),
    (
        "both hints: interval earlier",
        {"interval_hint": interval_hint(15), "oneshot_hint": oneshot(20)},
        5,
        S.HINT_INTERVAL,
    ),
    (
        "both hints: one-shot earlier",
        {"interval_hint": interval_hint(600), "oneshot_hint": oneshot(20)},
        20,
        S.HINT_ONESHOT,
    ),
    (
        "min clamp lifts a one-shot",
        {"min_interval": 30, "oneshot_hint": oneshot(1)},
        30,
        S.CLAMPED_MIN,
    ),
    (
        "max clamp cuts a long hint",
        {"max_interval": 120, "interval_hint": interval_hint(900)},
        120,
        S.CLAMPED_MAX,
    ),
    ("max clamp cuts backoff", {"max_interval": 100, "failure_count": 5}, 100, S.CLAMPED_MAX),
    ("clamps that fit change nothing", {"min_interval": 10, "max_interval": 100}, 50, S.BASELINE),
    (
        "timed pause beats everything",
        {
            "pause": Pause("maintenance", until=t(3600)),
            "max_interval": 60,
            "oneshot_hint": oneshot(5),
            "interval_hint": interval_hint(5),
        },
        3600,
        S.PAUSED,
    ),
    (
        "pause without end means never",
        {"pause": Pause("by hand"), "oneshot_hint": oneshot(5), "min_interval": 1},
        None,
        S.PAUSED,
    ),
]


@pytest.mark.parametrize(
    ("state", "expected_in", "source"),
    [row[1:] for row in PRECEDENCE],
    ids=[row[0] for row in PRECEDENCE],
)
def test_precedence(
    make_endpoint: MakeEndpoint,
    state: dict[str, Any],
    expected_in: float | None,
    source: ScheduleSource,
) -> None:
    endpoint = make_endpoint(interval=60, last_slot_at=t(-10), **state)

    expected_at = None if expected_in is None else t(expected_in)
    assert plan_next_run(endpoint, NOW) == NextRun(expected_at, source)


def test_a_baseline_slot_the_min_clamp_pushes_later_keeps_its_grid_time(
    make_endpoint: MakeEndpoint,
) -> None:
    """Min equal to max pins the time; the call still stands for the slot 50 s ahead."""
    endpoint = make_endpoint(interval=60, last_slot_at=t(-10), min_interval=70, max_interval=70)

    assert plan_next_run(endpoint, NOW) == NextRun(t(70), S.CLAMPED_MIN, t(50))


def test_a_call_the_max_clamp_brings_earlier_is_no_slot(make_endpoint: MakeEndpoint) -> None:
    endpoint = make_endpoint(interval=60, last_slot_at=t(-10), max_interval=20)

    assert plan_next_run(endpoint, NOW) == NextRun(t(20), S.CLAMPED_MAX)


EXPIRY = [
    ("interval hint expiring now", {"interval_hint": interval_hint(15, expires_in=0)}, True),
    ("interval hint expired", {"interval_hint": interval_hint(15, expires_in=-1)}, True),
    ("interval hint 1 µs left", {"interval_hint": interval_hint(15, expires_in=1e-6)}, False),
    ("one-shot expiring now", {"oneshot_hint": oneshot(5, expires_in=0)}, True),
    ("one-shot 1 µs left", {"oneshot_hint": oneshot(5, expires_in=1e-6)}, False),
    ("pause ending now", {"pause": Pause("p", until=NOW)}, True),
    ("pause ended", {"pause": Pause("p", until=t(-60))}, True),
    ("pause with 1 µs left", {"pause": Pause("p", until=t(1e-6))}, False),
]


@pytest.mark.parametrize(
    ("state", "ignored"), [row[1:] for row in EXPIRY], ids=[row[0] for row in EXPIRY]
)
def test_expiry_boundary(make_endpoint: MakeEndpoint, state: dict[str, Any], ignored: bool) -> None:
    """`expires_at == now` and `until == now` count as over: only a later instant is fresh."""
    plain = plan_next_run(make_endpoint(interval=60, last_slot_at=t(-10)), NOW)

    planned = plan_next_run(make_endpoint(interval=60, last_slot_at=t(-10), **state), NOW)

    assert (planned == plain) is ignored


@pytest.mark.parametrize(
    ("failures", "delay"),
    [
        (0, 60),
        (1, 120),
        (2, 240),
        (3, 480),
        (5, 1920),
        (6, BACKOFF_CAP.total_seconds()),
        (7, BACKOFF_CAP.total_seconds()),
        (10**9, BACKOFF_CAP.total_seconds()),
    ],
)
def test_backoff_doubles_per_failure_up_to_the_cap(
    make_endpoint: MakeEndpoint, failures: int, delay: float
) -> None:
    endpoint = make_endpoint(interval=60, last_slot_at=NOW, failure_count=failures)

    planned = plan_next_run(endpoint, NOW)

    assert planned.at == t(delay)
    assert planned.source is (S.BACKOFF if failures else S.BASELINE)


@pytest.mark.parametrize("interval", [2 * BACKOFF_CAP.total_seconds(), MAX_SECONDS])
def test_backoff_never_waits_longer_than_a_period_above_the_cap(
    make_endpoint: MakeEndpoint, interval: float
) -> None:
    endpoint = make_endpoint(interval=interval, last_slot_at=NOW, failure_count=10**6)

    assert plan_next_run(endpoint, NOW) == NextRun(t(interval), S.BASELINE)


def test_backoff_of_a_cron_baseline_counts_in_its_period(make_endpoint: MakeEndpoint) -> None:
    endpoint = make_endpoint(cron="*/10 * * * *", last_slot_at=NOW, failure_count=2)

    assert plan_next_run(endpoint, NOW) == NextRun(t(40 * 60), S.BACKOFF)


@pytest.mark.parametrize("late", [0.0, 0.5, 7.25, 59.999])
def test_interval_is_anchored_on_the_slot_not_on_the_finish(
    make_endpoint: MakeEndpoint, late: float
) -> None:
    slots = [NOW]
    for _ in range(5):
        endpoint = make_endpoint(interval=60, last_slot_at=slots[-1])
        slots.append(planned_at(endpoint, slots[-1] + timedelta(seconds=late)))

    assert slots == [t(60 * k) for k in range(6)]


@pytest.mark.parametrize("late", [0.0, 0.95, 59.999])
def test_a_min_interval_equal_to_the_interval_keeps_the_grid(
    make_endpoint: MakeEndpoint, late: float
) -> None:
    """The shipped `etl/fetch`: each call ended `late` after its slot, and the next slot is
    still one whole minimum after the previous one, so the clamp does not bite."""
    slots = [NOW]
    for _ in range(5):
        endpoint = make_endpoint(interval=60, min_interval=60, last_slot_at=slots[-1])
        planned = plan_next_run(endpoint, slots[-1] + timedelta(seconds=late))
        assert planned.source is S.BASELINE
        assert planned.at is not None
        slots.append(planned.at)

    assert slots == [t(60 * k) for k in range(6)]


def test_a_slot_less_than_min_after_the_last_waits_the_minimum_from_now(
    make_endpoint: MakeEndpoint,
) -> None:
    """Interval 60 s under a 70 s minimum: the slot 50 s ahead comes 60 s after the last, so
    the call waits until now + 70 s and stands for that slot."""
    endpoint = make_endpoint(interval=60, last_slot_at=t(-10), min_interval=70)

    assert plan_next_run(endpoint, NOW) == NextRun(t(70), S.CLAMPED_MIN, t(50))


@pytest.mark.parametrize("cron", [None, "* * * * *"])
def test_missed_slots_coalesce_to_one_run_now(
    make_endpoint: MakeEndpoint, cron: str | None
) -> None:
    """Down for an hour: one catch-up run now, then back on a one-minute rhythm."""
    missed = make_endpoint(interval=60, cron=cron, last_slot_at=t(-3600))
    assert plan_next_run(missed, NOW) == NextRun(NOW, S.BASELINE)

    caught_up = make_endpoint(interval=60, cron=cron, last_slot_at=NOW)
    assert plan_next_run(caught_up, NOW + timedelta(seconds=3)) == NextRun(t(60), S.BASELINE)


def test_a_new_interval_endpoint_runs_now_and_a_new_cron_one_at_its_next_fire(
    make_endpoint: MakeEndpoint,
) -> None:
    assert plan_next_run(make_endpoint(interval=300), t(1)) == NextRun(t(1), S.BASELINE)
    assert plan_next_run(make_endpoint(cron="0 13 * * *"), t(1)) == NextRun(t(3600), S.BASELINE)


def test_cron_baseline_follows_the_endpoint_time_zone(make_endpoint: MakeEndpoint) -> None:
    """09:00 in Paris is 07:00 UTC in summer (CEST, UTC+2)."""
    endpoint = make_endpoint(cron="0 9 * * *", timezone="Europe/Paris", last_slot_at=NOW)

    assert plan_next_run(endpoint, NOW).at == datetime(2026, 6, 2, 7, 0, tzinfo=UTC)


def test_cron_daily_job_fires_once_through_the_fall_back_night(
    make_endpoint: MakeEndpoint,
) -> None:
    """Run on time every day around 2026-10-25 in Paris: one 02:30 run per local day."""
    slot = datetime(2026, 10, 23, 0, 30, tzinfo=UTC)
    slots = []
    for _ in range(3):
        endpoint = make_endpoint(cron="30 2 * * *", timezone="Europe/Paris", last_slot_at=slot)
        slot = planned_at(endpoint, slot + timedelta(seconds=2))
        slots.append(slot)

    assert slots == [
        datetime(2026, 10, 24, 0, 30, tzinfo=UTC),
        datetime(2026, 10, 25, 0, 30, tzinfo=UTC),
        datetime(2026, 10, 26, 1, 30, tzinfo=UTC),
    ]


def test_a_timed_pause_skips_the_cron_slots_it_covered(make_endpoint: MakeEndpoint) -> None:
    """A daily 13:00 job paused until 15:00 today resumes at 13:00 tomorrow, not at 15:00."""
    endpoint = make_endpoint(
        cron="0 13 * * *", last_slot_at=t(-86400 + 3600), pause=Pause("deploy", until=t(3 * 3600))
    )

    assert plan_next_run(endpoint, NOW) == NextRun(t(25 * 3600), S.PAUSED)


def test_an_interval_endpoint_resumes_when_its_pause_ends(make_endpoint: MakeEndpoint) -> None:
    endpoint = make_endpoint(interval=60, last_slot_at=t(-10), pause=Pause("p", until=t(600)))

    assert plan_next_run(endpoint, NOW) == NextRun(t(600), S.PAUSED)
