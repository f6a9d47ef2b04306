"""Catch-up after downtime: which missed baseline slot runs, by `catch_up` and its window, when
the governor plans (after a run) and when a store claims a slot planned before the downtime."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from cronpilot.domain.model import CatchUp, Endpoint, NextRun, OneShotHint, ScheduleSource
from cronpilot.domain.runs.transitions import after_slot, caught_up
from cronpilot.domain.schedule.governor import MAX_LATE_GRACE, catch_up, plan_next_run

MakeEndpoint = Callable[..., Endpoint]
NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
S = ScheduleSource
ONE, NONE = CatchUp.ONE, CatchUp.NONE


def t(seconds: float) -> datetime:
    return NOW + timedelta(seconds=seconds)


# Every 60 s. Last slot 3630 s ago: the slots 3570 s ago … 30 s ago were missed, the next one
# is 30 s ahead.
INTERVAL: list[tuple[str, float, dict[str, Any], NextRun]] = [
    ("on time", -60, {}, NextRun(NOW, S.BASELINE)),
    ("late within the grace: runs", -60.5, {"catch_up": NONE}, NextRun(NOW, S.BASELINE, t(-0.5))),
    ("late within its grace: runs", -65, {"catch_up": NONE}, NextRun(NOW, S.BASELINE, t(-5))),
    (
        "late within its grace, the next slot within the floor stands for it",
        -63,
        {"catch_up": NONE, "floor": 58},
        NextRun(t(57), S.BASELINE),
    ),
    ("down an hour, one: the latest missed slot now", -3630, {}, NextRun(NOW, S.BASELINE, t(-30))),
    ("down an hour, none: the next slot", -3630, {"catch_up": NONE}, NextRun(t(30), S.BASELINE)),
    (
        "missed slot older than the window",
        -3630,
        {"catch_up_window": 29.999},
        NextRun(t(30), S.BASELINE),
    ),
    (
        "missed slot just within the window",
        -3630,
        {"catch_up_window": 30},
        NextRun(NOW, S.BASELINE, t(-30)),
    ),
    ("window 0: like none", -3630, {"catch_up_window": 0}, NextRun(t(30), S.BASELINE)),
    (
        "next slot within the floor stands for the missed one",
        -3657,
        {"floor": 5},
        NextRun(t(3), S.BASELINE),
    ),
]


@pytest.mark.parametrize(
    ("last", "fields", "expected"), [row[1:] for row in INTERVAL], ids=[row[0] for row in INTERVAL]
)
def test_interval_catch_up(
    make_endpoint: MakeEndpoint, last: float, fields: dict[str, Any], expected: NextRun
) -> None:
    endpoint = make_endpoint(interval=60, last_slot_at=t(last), **fields)

    assert plan_next_run(endpoint, NOW) == expected


DAY = 86_400
# `*/10 * * * *` last ran two hours ago; it is 12:05: 12:00 was the latest slot missed.
CRON: list[tuple[str, str, float, dict[str, Any], NextRun]] = [
    ("one", "*/10 * * * *", -7200, {}, NextRun(t(300), S.BASELINE, NOW)),
    ("none", "*/10 * * * *", -7200, {"catch_up": NONE}, NextRun(t(600), S.BASELINE)),
    (
        "outside the window",
        "*/10 * * * *",
        -7200,
        {"catch_up_window": 60},
        NextRun(t(600), S.BASELINE),
    ),
    # A daily 12:00 job last run a week ago, seen at 12:05: today's 12:00 runs now.
    ("daily, down a week", "0 12 * * *", -7 * DAY, {}, NextRun(t(300), S.BASELINE, NOW)),
    (
        "daily, outside a one-minute window",
        "0 12 * * *",
        -7 * DAY,
        {"catch_up_window": 60},
        NextRun(t(DAY), S.BASELINE),
    ),
]


@pytest.mark.parametrize(
    ("cron", "last", "fields", "expected"), [row[1:] for row in CRON], ids=[row[0] for row in CRON]
)
def test_cron_catch_up(
    make_endpoint: MakeEndpoint, cron: str, last: float, fields: dict[str, Any], expected: NextRun
) -> None:
    endpoint = make_endpoint(cron=cron, last_slot_at=t(last), **fields)

    assert plan_next_run(endpoint, t(300)) == expected


def test_a_dense_cron_finds_its_latest_missed_fire(make_endpoint: MakeEndpoint) -> None:
    """Every second for a day: the latest missed second, without walking 86,400 fires."""
    endpoint = make_endpoint(cron="* * * * * *", last_slot_at=t(-DAY), floor=0.5)

    assert plan_next_run(endpoint, t(0.75)) == NextRun(t(0.75), S.BASELINE, NOW)


# At a claim: the slot planned before the downtime (never run yet, so no last slot).
CLAIMED: list[tuple[str, float, float, dict[str, Any], NextRun | None]] = [
    ("called on time", 0, 0.5, {}, None),
    ("late within the grace", 0, 1.0, {"catch_up": NONE}, None),
    ("a busy worker, within a tenth of the gap: runs", 0, 5.9, {"catch_up": NONE}, None),
    (
        "later than a tenth of the gap, none: the next slot",
        0,
        6.1,
        {"catch_up": NONE},
        NextRun(t(60), S.BASELINE),
    ),
    ("late, no later slot passed: runs as planned", 0, 45, {}, None),
    ("late, later slots passed: the latest runs", -3630, 0, {}, NextRun(NOW, S.BASELINE, t(-30))),
    ("none: the next slot", -3630, 0, {"catch_up": NONE}, NextRun(t(30), S.BASELINE)),
    ("late, outside the window", -3630, 0, {"catch_up_window": 10}, NextRun(t(30), S.BASELINE)),
]


@pytest.mark.parametrize(
    ("planned", "claimed", "fields", "expected"),
    [row[1:] for row in CLAIMED],
    ids=[row[0] for row in CLAIMED],
)
def test_a_claim_continues_the_grid_of_the_planned_slot(
    make_endpoint: MakeEndpoint,
    planned: float,
    claimed: float,
    fields: dict[str, Any],
    expected: NextRun | None,
) -> None:
    endpoint = make_endpoint(interval=60, next_run_at=t(planned), **fields)

    assert catch_up(endpoint, t(claimed)) == expected


def test_a_claim_catches_up_a_jittered_slot_by_its_grid(make_endpoint: MakeEndpoint) -> None:
    endpoint = make_endpoint(
        interval=60, jitter=10, next_slot_at=t(-3630), next_run_at=t(-3625), catch_up=NONE
    )

    moved = caught_up(endpoint, NOW)

    assert moved is not None
    assert moved.next_slot == t(30)
    assert moved.next_run_at is not None and t(30) <= moved.next_run_at < t(40)


def test_only_missed_baseline_slots_are_caught_up(make_endpoint: MakeEndpoint) -> None:
    hinted = make_endpoint(
        interval=60,
        next_run_at=t(-3630),
        next_run_source=S.HINT_ONESHOT,
        oneshot_hint=OneShotHint(t(-3630), expires_at=t(600), reason="now"),
    )

    assert catch_up(hinted, NOW) is None
    assert catch_up(make_endpoint(interval=60, next_run_at=None), NOW) is None


@pytest.mark.parametrize(
    ("late", "runs"), [(MAX_LATE_GRACE, True), (MAX_LATE_GRACE + timedelta(seconds=1), False)]
)
def test_the_grace_of_a_long_period_is_capped(
    make_endpoint: MakeEndpoint, late: timedelta, runs: bool
) -> None:
    endpoint = make_endpoint(interval=3600, next_run_at=NOW, catch_up=NONE)

    moved = catch_up(endpoint, NOW + late)

    assert moved == (None if runs else NextRun(t(3600), S.BASELINE))


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        (ONE, NextRun(t(3 * 3600 + 30), S.BASELINE, t(3 * 3600))),
        (NONE, NextRun(t(3 * 3600 + 60), S.BASELINE)),
    ],
)
def test_a_slot_the_min_clamp_pushed_later_is_caught_up_by_its_rule(
    make_endpoint: MakeEndpoint, rule: CatchUp, expected: NextRun
) -> None:
    """`min_interval` above the interval pushes every slot after a run later: each is still a
    baseline slot, whose catch-up rule holds after downtime."""
    endpoint = make_endpoint(interval=60, min_interval=70, catch_up=rule, last_slot_at=t(-60))
    ran = after_slot(endpoint, NOW, True, t(0.5))
    assert (ran.next_run_at, ran.next_slot_at, ran.next_run_source) == (
        t(70.5),
        t(60),
        S.CLAMPED_MIN,
    )

    assert catch_up(ran, t(3 * 3600 + 30)) == expected
