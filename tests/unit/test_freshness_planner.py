"""The built-in planner's step (`domain.planning.freshness_planner`): damped, explained in numbers,
bounded; an endpoint it cannot estimate keeps its schedule."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from cronpilot.domain.model import (
    Endpoint,
    EndpointSpec,
    IntervalHint,
    Objective,
    Schedule,
)
from cronpilot.domain.planning.call_budget import BudgetError
from cronpilot.domain.planning.change_rate import Look, RateEstimate, estimate
from cronpilot.domain.planning.freshness_planner import (
    FAILING_LOOK_AGAIN_SECONDS,
    MAX_LOOK_AGAIN_SECONDS,
    STEP_CONFIDENCE,
    STEP_TTL_SECONDS,
    SURE_CONFIDENCE,
    BuiltinVerdict,
    LastMove,
    Seat,
    budget_of,
    judge_freshness,
    last_move,
    look_again,
    tuned,
)
from cronpilot.domain.planning.planning import Proposal, ProposalKind, ProposalStatus

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


def test_an_uncertain_step_faster_is_damped_to_six_tenths() -> None:
    busy = Seat(20.0, 5.0, 3600.0, _estimate(3, 6))
    rare = Seat(20.0, 5.0, 3600.0, _estimate(2, 200))
    step = tuned([busy, rare], 0, 2 / 20)
    assert step.interval_seconds == 12.0, step.reason
    assert "a damped step towards every 11 s" in step.reason
    assert step.confidence == STEP_CONFIDENCE


def test_a_step_goes_straight_to_the_edge_of_what_the_estimate_allows() -> None:
    """Every rate the estimate allows wants this endpoint called more often than every
    11.5 s, so the step goes there at once rather than to six tenths of 20 s."""
    busy = Seat(20.0, 5.0, 3600.0, _estimate(3, 6))
    steady = Seat(20.0, 5.0, 3600.0, _estimate(20, 200))
    step = tuned([busy, steady], 0, 3 / 20)
    assert step.interval_seconds is not None and step.target_seconds is not None
    assert step.target_seconds < step.interval_seconds < 12.0, step.reason
    assert "(to the edge of what the estimate allows, towards every 9.6 s" in step.reason
    assert step.confidence == STEP_CONFIDENCE


@pytest.mark.parametrize("calls", [6, 12, 19, 20, 21, 22, 31, 44])
def test_a_source_that_changed_on_every_call_is_called_more_often(calls: int) -> None:
    """Every call changed: the rate's upper end is unbounded (or, rounded, a huge finite
    number, for 20 or 21 calls), and at it the split would give the source up; the point
    estimate decides the direction instead of "keep"."""
    always = Seat(20.0, 5.0, 3600.0, _estimate(calls, calls))
    others = [Seat(20.0, 5.0, 3600.0, _estimate(k, 200)) for k in (100, 20, 2)]
    step = tuned([always, *others], 0, 4 / 20)
    assert step.interval_seconds is not None and step.interval_seconds < 12, step.reason


def test_a_step_slower_goes_to_the_edge_of_what_the_estimate_allows() -> None:
    """Two changes in 200 calls: every rate the estimate allows wants it called every 49 s or
    more rarely, so the step goes there, past x1.4 of 20 s."""
    rare = Seat(20.0, 5.0, 3600.0, _estimate(2, 200))
    busy = Seat(20.0, 5.0, 3600.0, _estimate(100, 200))
    step = tuned([rare, busy], 0, 2 / 20)
    assert step.interval_seconds is not None and step.target_seconds is not None
    assert 28.0 < step.interval_seconds < step.target_seconds, step.reason
    assert "(to the edge of what the estimate allows, towards every 1.4 min" in step.reason


def test_the_upper_end_of_the_rate_widens_what_the_estimate_allows() -> None:
    """Three changes in ten calls, called every 15 s: the point rate's best interval is longer
    (16 s), but the estimate's upper end allows 14 s, so 15 s is kept."""
    seats = [
        Seat(15.0, 5.0, 3600.0, _estimate(3, 10)),
        Seat(20.0, 5.0, 3600.0, _estimate(20, 200)),
    ]
    step = tuned(seats, 0, 2 / 20)
    assert step.interval_seconds is None
    assert "the estimate allows every 14 s to every 20 s: keeping it" in step.reason


def test_a_failing_endpoint_is_looked_at_again_soon() -> None:
    """Left to the backoff, and looked at again within a minute (or one of its intervals)
    rather than after the whole wait between looks."""
    failing, other = _endpoint("failing"), _endpoint("other")
    failing = replace(failing, failure_count=1)
    estimates = {failing.id: _estimate(3, 10), other.id: _estimate(3, 10)}
    verdict = judge_freshness(failing, estimates, [failing, other], NOW)
    assert verdict.interval_seconds is None
    assert verdict.look_again_seconds == FAILING_LOOK_AGAIN_SECONDS < look_again(20.0)


def test_a_source_silent_for_fewer_than_eight_calls_keeps_its_interval() -> None:
    """A source changing every minute, called every 20 s, is silent for its first four calls
    a quarter of the time: too little to give its calls up on. The planner looks again once
    the eighth call has come, not after its dwell."""
    busy = Seat(20.0, 5.0, 3600.0, _estimate(100, 200))
    few = tuned([Seat(20.0, 5.0, 3600.0, _estimate(0, 7)), busy], 0, 2 / 20)
    assert few.interval_seconds is None
    assert few.reason.endswith("silent for fewer than 8 calls: keeping it")
    eight = tuned([Seat(20.0, 5.0, 3600.0, _estimate(0, 8)), busy], 0, 2 / 20)
    assert eight.interval_seconds == 28.0

    quiet, other = _endpoint("quiet"), _endpoint("other")
    estimates = {quiet.id: _estimate(0, 5), other.id: _estimate(100, 200)}
    verdict = judge_freshness(quiet, estimates, [quiet, other], NOW)
    assert verdict.interval_seconds is None
    assert verdict.look_again_seconds == 3 * 20


def test_the_hours_last_changes_are_kept_for_a_step_back() -> None:
    """With two changes left of the hour's limit a silent source does not climb: the change
    that would bring it back once it starts to change must not be refused."""
    silent = Seat(20.0, 5.0, 3600.0, _estimate(0, 50))
    busy = Seat(20.0, 5.0, 3600.0, _estimate(100, 200))
    climbs = tuned([silent, busy], 0, 2 / 20, changes_left=3).interval_seconds
    assert climbs is not None and climbs > 20
    kept = tuned([silent, busy], 0, 2 / 20, changes_left=2)
    assert kept.interval_seconds is None
    assert kept.reason.endswith("but the hour's last 2 change(s) are kept for a step back")
    # An admin lowered the limit below what the hour has already applied.
    spent = tuned([silent, busy], 0, 2 / 20, changes_left=-1)
    assert spent.interval_seconds is None
    assert spent.reason.endswith("but no change is left this hour")
    faster = tuned([Seat(60.0, 5.0, 3600.0, _estimate(100, 200)), busy], 0, 2 / 20, changes_left=1)
    assert faster.interval_seconds is not None and faster.interval_seconds < 60


def test_a_sure_step_goes_straight_to_the_best_split() -> None:
    seats = [
        Seat(20.0, 5.0, 3600.0, _estimate(0, 2000)),
        Seat(20.0, 5.0, 3600.0, _estimate(1000, 2000)),
    ]
    step = tuned(seats, 1, 2 / 20)
    assert step.interval_seconds == pytest.approx(step.target_seconds, rel=1e-3)
    assert "straight to the best split" in step.reason
    assert step.confidence == SURE_CONFIDENCE


def test_a_source_silent_from_its_first_dozen_calls_reaches_minutes_within_the_hour() -> None:
    """Each look sees the calls made since the last at the interval then in force, and looks
    again when the planner says: damped steps, but not a crawl."""
    busy = Seat(20.0, 5.0, 3600.0, _estimate(100, 200))
    looks = [Look(20.0, False)] * 12
    interval, elapsed = 20.0, 0.0
    while elapsed < 3600:
        silent = Seat(interval, 5.0, 3600.0, estimate(looks))
        step = tuned([silent, busy], 0, 2 / 20).interval_seconds
        assert step is None or interval < step <= interval * 1.4 + 1e-3
        interval = step or interval
        wait = look_again(interval)
        looks += [Look(interval, False)] * int(wait // interval)
        elapsed += wait
    assert interval >= 300


def _climbed_then_changed(changes: int) -> RateEstimate | None:
    """Silent for 8 calls at 20 s and 3 at 28 s, climbed to 39.2 s, then `changes` changes in
    its next 4 calls."""
    looks = [Look(20.0, False)] * 8 + [Look(28.0, False)] * 3
    return estimate(looks + [Look(39.2, i < changes) for i in range(4)])


def test_a_source_climbed_on_silence_goes_straight_back_once_it_changes() -> None:
    """Two changes after the climb: the estimate still allows 39 s (23 s to 52 s), but the
    climb had no estimate behind it, so the source goes back to its share at the point
    estimate. Not when its interval is no climb on silence, nor after three changes, when
    the estimate's own interval decides."""
    busy = Seat(20.0, 5.0, 3600.0, _estimate(100, 200))
    climbed = Seat(39.2, 5.0, 3600.0, _climbed_then_changed(2))
    back = tuned([climbed, busy], 0, 2 / 20, climbed_on_silence=True)
    assert back.interval_seconds == pytest.approx(back.target_seconds, rel=1e-3)
    assert back.interval_seconds is not None and 30 < back.interval_seconds < 35, back.reason
    assert "it changed after its interval was lengthened on its silence" in back.reason
    assert "(straight back to the best split of 360/h" in back.reason

    not_climbed = tuned([climbed, busy], 0, 2 / 20)
    assert not_climbed.interval_seconds is None
    assert "the estimate allows every 23 s to every 52 s: keeping it" in not_climbed.reason
    known = Seat(39.2, 5.0, 3600.0, _climbed_then_changed(3))
    assert tuned([known, busy], 0, 2 / 20, climbed_on_silence=True).interval_seconds is None
    # Its min_interval is where it is: no step "back" that would not call it more often.
    floored = replace(climbed, min_seconds=38.0)
    assert tuned([floored, busy], 0, 2 / 20, climbed_on_silence=True).interval_seconds is None


def _judged_after_climb(
    *, at: datetime = NOW, silent_before: bool = True, interval: float = 39.2
) -> BuiltinVerdict:
    """The planner's look at an endpoint lengthened from 28 s to 39.2 s a minute before NOW,
    that changed twice since, now called every `interval`."""
    hint = IntervalHint(interval, NOW + timedelta(hours=1), "built-in planner")
    climbed, busy = replace(_endpoint("climbed"), interval_hint=hint), _endpoint("busy")
    estimates = {climbed.id: _climbed_then_changed(2), busy.id: _estimate(100, 200)}
    move = LastMove(NOW - timedelta(seconds=60), 28.0, 39.2)
    return judge_freshness(
        climbed,
        estimates,
        [climbed, busy],
        at,
        move=move,
        dwell_seconds=120,
        silent_before_move=silent_before,
    )


def test_a_step_back_after_silence_waits_for_the_climbs_dwell() -> None:
    """The step back still waits for the climb to stand its dwell; it is taken only when the
    source showed no change before the climb, and the climb's interval is still in force."""
    held = _judged_after_climb()
    assert held.interval_seconds is None
    assert "not yet: it would undo the last change (to every 39 s)" in held.reasoning
    later = NOW + timedelta(seconds=61)
    back = _judged_after_climb(at=later)
    assert back.interval_seconds is not None and back.interval_seconds < 35, back.reasoning
    assert _judged_after_climb(at=later, silent_before=False).interval_seconds is None
    assert _judged_after_climb(at=later, interval=45.0).interval_seconds is None


def _proposal(at: datetime, interval: float, ttl: float = 3600.0) -> Proposal:
    return Proposal(
        id=f"p{at.minute}",
        endpoint_id="e",
        job_id="j",
        kind=ProposalKind.INTERVAL,
        reason="",
        proposed_by="freshness",
        created_at=at,
        status=ProposalStatus.APPLIED,
        interval_seconds=interval,
        ttl_seconds=ttl,
    )


def test_the_last_move_runs_from_the_change_before_it_or_the_baseline() -> None:
    older = _proposal(NOW - timedelta(minutes=10), 28.0)
    newer = _proposal(NOW - timedelta(minutes=1), 39.2)
    assert last_move([newer, older], 20.0) == LastMove(newer.created_at, 28.0, 39.2)
    lapsed = _proposal(NOW - timedelta(minutes=10), 28.0, ttl=60)
    assert last_move([newer, lapsed], 20.0) == LastMove(newer.created_at, 20.0, 39.2)
    assert last_move([], 20.0) is None


def test_never_back_within_a_dwell() -> None:
    """A rule slowed the busy endpoint to 40 s a minute ago: the planner would speed it up,
    but not until that change has stood its dwell; then it may."""
    busy, silent = _endpoint("busy"), _endpoint("silent")
    hint = IntervalHint(40.0, NOW + timedelta(hours=1), "proposed by rule 1")
    busy = replace(busy, interval_hint=hint)
    estimates = {busy.id: _estimate(100, 200), silent.id: _estimate(0, 200)}
    slowed = LastMove(NOW - timedelta(seconds=60), 20.0, 40.0)

    held = judge_freshness(busy, estimates, [busy, silent], NOW, move=slowed, dwell_seconds=120)
    assert held.interval_seconds is None
    assert "not yet: it would undo the last change (to every 40 s) before its dwell ends" in (
        held.reasoning
    )

    later = NOW + timedelta(seconds=61)
    moved = judge_freshness(busy, estimates, [busy, silent], later, move=slowed, dwell_seconds=120)
    assert moved.interval_seconds is not None and moved.interval_seconds < 40

    onwards = LastMove(NOW - timedelta(seconds=60), 60.0, 40.0)
    same_way = judge_freshness(
        busy, estimates, [busy, silent], NOW, move=onwards, dwell_seconds=120
    )
    assert same_way.interval_seconds is not None and same_way.interval_seconds < 40


@pytest.mark.parametrize(
    "busy",
    [
        {"failure_count": 2},
        {"retry_after_at": NOW + timedelta(minutes=5)},
    ],
)
def test_failures_and_retry_after_keep_their_say(busy: dict[str, Any]) -> None:
    failing, other = replace(_endpoint("busy"), **busy), _endpoint("silent")
    estimates = {failing.id: _estimate(100, 200), other.id: _estimate(0, 200)}
    verdict = judge_freshness(failing, estimates, [failing, other], NOW)
    assert verdict.interval_seconds is None
    assert verdict.reasoning == (
        "the endpoint is failing or asked to wait (Retry-After): left to the backoff"
    )


def test_the_planner_looks_again_within_a_day_however_long_the_period() -> None:
    """`submit_analysis` allows no more than a day: a daily cron's three periods would fail
    the built-in planner's own submit."""
    assert look_again(86_400) == STEP_TTL_SECONDS / 2 < MAX_LOOK_AGAIN_SECONDS
    assert look_again(5) == 120
    # Within half a shorter ttl too, and never below the floor.
    assert look_again(3600, 3600) == 1800
    assert look_again(5, 60) == 120


def test_the_budget_is_the_jobs_or_what_its_declared_schedules_make() -> None:
    specs = [_endpoint("a").spec, _endpoint("b").spec]
    assert budget_of(None, specs, NOW) == pytest.approx(2 / 20)
    assert budget_of("600/h", specs, NOW) == pytest.approx(600 / 3600)
    with pytest.raises(BudgetError, match="budget 1/h is below the 2/h"):
        budget_of("1/h", specs, NOW)


def test_a_budget_moves_a_lone_endpoint_that_its_own_schedule_would_keep() -> None:
    """Alone in its job, an endpoint's declared schedule is its whole budget; a job's
    `budget: 60/h` gives it a call a minute, in damped steps while the estimate is young."""
    lone = _endpoint("lone")
    estimates = {lone.id: _estimate(0, 12)}
    kept = judge_freshness(lone, estimates, [lone], NOW)
    assert kept.interval_seconds is None and "already at its share" in kept.reasoning

    budgeted = judge_freshness(lone, estimates, [lone], NOW, budget="60/h")
    assert budgeted.interval_seconds == 28.0
    assert "of 60/h across the job's 1 endpoints" in budgeted.reasoning
    # A look that agrees with the step proposes nothing, so the step outlives every wait
    # between looks rather than lapse back to the declared 20 s.
    assert budgeted.ttl_seconds == STEP_TTL_SECONDS > look_again(3600 * 24 * 7)

    # An admin's shorter limit on hints caps the step's ttl, which the guardrails would
    # otherwise refuse, and the looks come within half of it.
    capped = judge_freshness(lone, estimates, [lone], NOW, budget="60/h", max_ttl_seconds=3600)
    assert capped.interval_seconds == 28.0
    assert capped.ttl_seconds == 3600
    assert capped.look_again_seconds <= 1800

    short = judge_freshness(lone, estimates, [lone], NOW, budget="0.5/h")
    assert short.interval_seconds is None
    assert short.reasoning.startswith("budget 0.5/h is below the 1/h")


def test_age_keeps_calling_a_source_that_freshness_gives_up_on() -> None:
    """A source that changes every second cannot be kept fresh by a call every few seconds:
    freshness spends the calls on its slower sibling, age still wants each change soon."""
    fast = RateEstimate(1.0, 0.9, 1.1, calls=2000, changes=2000, mean_seconds=1.0)
    slow = RateEstimate(0.01, 0.009, 0.011, calls=2000, changes=200, mean_seconds=10.0)

    def target(objective: Objective) -> float | None:
        seats = [Seat(20.0, 5.0, 3600.0, fast, objective), Seat(20.0, 5.0, 3600.0, slow)]
        return tuned(seats, 0, 2 / 20).target_seconds

    given_up, kept_up = target(Objective.FRESHNESS), target(Objective.AGE)
    assert given_up is not None and kept_up is not None
    assert given_up > 20 > kept_up


def test_an_endpoint_not_estimated_yet_is_looked_at_again_after_a_few_calls() -> None:
    """No change was made, so there is no dwell to wait out."""
    fresh = _endpoint("fresh")
    verdict = judge_freshness(fresh, {}, [fresh], NOW)
    assert verdict.interval_seconds is None
    assert verdict.look_again_seconds == 60


def test_an_estimate_of_one_call_is_looked_at_again_at_the_next_call() -> None:
    """Two answers that differed (a start that caught up a missed slot calls twice at once)
    make an estimate of one call: too young to step on, and no reason to wait a dwell; an
    integration test waited 120 s for the planner's second look."""
    fresh, other = _endpoint("fresh"), _endpoint("other")
    for changed in (True, False):
        once = estimate([Look(20.0, changed)])
        verdict = judge_freshness(fresh, {fresh.id: once}, [fresh, other], NOW)
        assert verdict.interval_seconds is None
        assert verdict.look_again_seconds == 20, verdict.reasoning
