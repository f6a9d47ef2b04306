"""The floor (CRONPILOT_MIN_INTERVAL_SECONDS, stamped on each spec): no schedule, hint or clamp
plans a slot closer than it to the previous one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from cronpilot.domain.model import Endpoint, IntervalHint, NextRun, OneShotHint, ScheduleSource
from cronpilot.domain.planning.guardrails import GuardrailRule, Refusal, refusal
from cronpilot.domain.planning.planning import ProposalDraft, ProposalKind
from cronpilot.domain.runs.transitions import after_slot
from cronpilot.domain.schedule.governor import plan_next_run
from tests.support.settings import limits_for_tests

MakeEndpoint = Callable[..., Endpoint]
NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
S = ScheduleSource


def t(seconds: float) -> datetime:
    return NOW + timedelta(seconds=seconds)


def test_an_interval_below_the_floor_is_lifted_to_it(make_endpoint: MakeEndpoint) -> None:
    endpoint = make_endpoint(interval=0.2, floor=1, last_slot_at=NOW)

    assert plan_next_run(endpoint, t(0.1)) == NextRun(t(1), S.CLAMPED_MIN)


def test_an_interval_equal_to_the_floor_does_not_drift(make_endpoint: MakeEndpoint) -> None:
    """The floor counts from the previous slot, not from the finish."""
    endpoint = make_endpoint(interval=5, floor=5, last_slot_at=NOW)
    slots = []
    for _ in range(4):
        planned = plan_next_run(endpoint, (endpoint.last_slot_at or NOW) + timedelta(seconds=2))
        assert planned.source is S.BASELINE and planned.at is not None
        slots.append(planned.at)
        endpoint = after_slot(endpoint, planned.at, True, planned.at + timedelta(seconds=2))

    assert slots == [t(5), t(10), t(15), t(20)]


def test_hints_cannot_come_closer_than_the_floor(make_endpoint: MakeEndpoint) -> None:
    shot = make_endpoint(
        interval=60,
        floor=10,
        last_slot_at=t(-2),
        oneshot_hint=OneShotHint(NOW, expires_at=t(600), reason="again"),
    )
    fast = make_endpoint(
        interval=60,
        floor=10,
        last_slot_at=t(-2),
        interval_hint=IntervalHint(0.5, expires_at=t(600), reason="faster"),
    )

    assert plan_next_run(shot, NOW) == NextRun(t(8), S.CLAMPED_MIN)
    assert plan_next_run(fast, NOW) == NextRun(t(8), S.CLAMPED_MIN)


def test_with_jitter_the_floor_counts_from_the_latest_possible_call(
    make_endpoint: MakeEndpoint,
) -> None:
    """The previous slot's call may have gone out up to its jitter after it."""
    endpoint = make_endpoint(
        interval=60,
        jitter=20,
        floor=10,
        last_slot_at=t(-5),
        oneshot_hint=OneShotHint(NOW, expires_at=t(600), reason="again"),
    )

    assert plan_next_run(endpoint, NOW) == NextRun(t(25), S.CLAMPED_MIN)


def test_a_min_clamp_above_the_floor_still_wins(make_endpoint: MakeEndpoint) -> None:
    endpoint = make_endpoint(
        interval=60,
        floor=1,
        min_interval=30,
        last_slot_at=t(-2),
        oneshot_hint=OneShotHint(NOW, expires_at=t(600), reason="again"),
    )

    assert plan_next_run(endpoint, NOW) == NextRun(t(30), S.CLAMPED_MIN)


def test_a_proposed_interval_below_the_floor_is_refused(make_endpoint: MakeEndpoint) -> None:
    endpoint = make_endpoint(interval=60, floor=5, min_interval=2)
    draft = ProposalDraft(ProposalKind.INTERVAL, "faster", 3, ttl_seconds=60)

    assert refusal(draft, endpoint, 0, NOW, limits_for_tests()) == Refusal(
        GuardrailRule.INTERVAL, "interval 3s is below the floor 5s"
    )
    at_floor = replace(draft, interval_seconds=5)
    assert refusal(at_floor, endpoint, 0, NOW, limits_for_tests()) is None
