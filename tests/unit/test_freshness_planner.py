"""The built-in planner's step (`domain.planning.freshness_planner`): damped, explained in numbers,
bounded; an endpoint it cannot estimate keeps its schedule."""

from __future__ import annotations

from datetime import UTC, datetime

from cronpilot.domain.model import Endpoint, EndpointSpec, Schedule
from cronpilot.domain.planning.change_rate import Look, RateEstimate, estimate
from cronpilot.domain.planning.freshness_planner import Seat, judge_freshness, tuned

NOW = datetime(2026, 11, 29, tzinfo=UTC)


def _endpoint(name: str) -> Endpoint:
    spec = EndpointSpec(
        name,
        "https://example.com",
        Schedule(interval_seconds=20),
        min_interval_seconds=5,
        max_interval_seconds=3600,
    )
    return Endpoint(name, "j", "j", spec)


def _estimate(changes: int, calls: int) -> RateEstimate:
    spread = [(i + 1) * changes // calls != i * changes // calls for i in range(calls)]
    found = estimate([Look(20.0, changed) for changed in spread])
    assert found is not None
    return found


def test_an_uncertain_step_is_damped_and_a_sure_one_goes_straight() -> None:
    busy = Seat(20.0, 5.0, 3600.0, _estimate(6, 12))
    silent_few = Seat(20.0, 5.0, 3600.0, _estimate(0, 12))
    few = tuned([silent_few, busy], 0, 2 / 20)
    assert few.interval_seconds == 28.0, few.reason

    silent_many = Seat(20.0, 5.0, 3600.0, _estimate(0, 200))
    many = tuned([silent_many, Seat(20.0, 5.0, 3600.0, _estimate(100, 200))], 1, 2 / 20)
    assert many.interval_seconds is not None and many.interval_seconds < 20 * 0.6 + 1e-9
    assert many.reason.startswith("changes about every 29 s (100 changes seen in 200 calls)")


def test_no_step_while_the_estimate_allows_the_current_interval() -> None:
    seats = [Seat(20.0, 5.0, 3600.0, _estimate(3, 10)), Seat(20.0, 5.0, 3600.0, _estimate(3, 10))]
    step = tuned(seats, 0, 2 / 20)
    assert step.interval_seconds is None
    assert "the estimate allows" in step.reason


def test_answers_that_cannot_be_compared_keep_the_schedule() -> None:
    opaque, other = _endpoint("opaque"), _endpoint("other")
    verdict = judge_freshness(opaque, {opaque.id: None}, [opaque, other], NOW)
    assert verdict.interval_seconds is None
    assert verdict.reasoning.startswith("cannot estimate: its answers cannot be compared")


def test_a_budget_below_what_max_interval_allows_keeps_the_schedule() -> None:
    seats = [Seat(20.0, 5.0, 60.0, _estimate(0, 50)), Seat(20.0, 5.0, 60.0, None)]
    step = tuned(seats, 0, 1 / 3600)
    assert step.interval_seconds is None
    assert step.reason == (
        "a budget of 1/h is below the 240/h the endpoints' max_interval allows: "
        "keeping the schedule"
    )
