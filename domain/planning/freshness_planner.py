"""The built-in planner's step (decision 0048): spend a job's calls where they keep its copies
fresh. Each endpoint's change rate is estimated from its calls (`domain.planning.change_rate`), the
job's budget of calls is split across its endpoints (`domain.planning.call_budget`), and the
analysed endpoint moves towards its share:

- only when the estimate's interval excludes the current interval (the best intervals for
  the low and the high end of the rate both lie on one side of it), or it never changed;
- within x0.6-x1.4 of the current interval while the estimate is uncertain (Apache Nutch's
  adaptive schedule warns that steps past +-40 % destabilise it), straight to the target once
  it is sure: when the freshness at the target under either end of the estimate's interval
  differs by at most `SURE_SPREAD`.

Pure: the caller supplies the job's endpoints as `Seat`s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from cronpilot.domain.model import Endpoint
from cronpilot.domain.planning.call_budget import (
    BudgetError,
    Objective,
    Source,
    best_intervals,
    per_hour,
)
from cronpilot.domain.planning.change_rate import RateEstimate, duration_text, freshness
from cronpilot.domain.planning.heuristic import (
    AFTER_UPSTREAMS_LOOK_AGAIN_SECONDS,
    HINT_TTL_PERIODS,
    MAX_LOOK_AGAIN_SECONDS,
    MIN_HINT_TTL_SECONDS,
    HeuristicVerdict,
    current_interval,
)
from cronpilot.domain.schedule.schedule import baseline_period

SLOWER, FASTER = 1.4, 0.6
"""The most an uncertain step moves an interval."""
UNMOVED = 0.05
"""A target within this share of the current interval is no change worth making."""
SURE_SPREAD = 0.05
"""The estimate is sure of a target when the freshness there at either end of its interval
differs by at most this much: more calls would not change the step."""
SURE_CONFIDENCE, STEP_CONFIDENCE = 0.95, 0.8
"""The confidence of a step straight to its target, and of a damped one
(`domain.planning.autonomy`)."""


@dataclass(frozen=True, slots=True)
class Seat:
    """One endpoint of a job as the planner sees it."""

    current_seconds: float
    min_seconds: float
    max_seconds: float
    estimate: RateEstimate | None
    """None: not estimated (yet): it keeps its current interval, and its calls."""
    objective: Objective = Objective.FRESHNESS


@dataclass(frozen=True, slots=True)
class Tuning:
    """What the planner makes of one endpoint: the interval to propose (None: keep it), why,
    in numbers, and how sure."""

    reason: str
    interval_seconds: float | None = None
    confidence: float = STEP_CONFIDENCE
    target_seconds: float | None = None
    """The best split's interval for it, whether or not a step goes there."""


def _source(seat: Seat, rate: float | None = None) -> Source:
    estimate = seat.estimate
    if estimate is None:
        return Source(0.0, seat.current_seconds, seat.current_seconds)
    known = estimate.rate if rate is None else rate
    return Source(known, seat.min_seconds, seat.max_seconds, seat.objective)


def _target(seats: Sequence[Seat], index: int, budget: float, rate: float | None) -> float:
    sources = [_source(s, rate if i == index else None) for i, s in enumerate(seats)]
    return best_intervals(sources, budget)[index]


def _every(seconds: float) -> str:
    return f"every {duration_text(seconds)}"


def tuned(seats: Sequence[Seat], index: int, calls_per_second: float) -> Tuning:
    """The step for `seats[index]` under a budget of `calls_per_second` for the whole job."""
    seat = seats[index]
    estimate = seat.estimate
    current = seat.current_seconds
    if estimate is None or estimate.calls < 2:
        return Tuning("fewer than two compared calls: nothing to estimate yet")
    try:
        target = _target(seats, index, calls_per_second, None)
        ends = sorted(
            _target(seats, index, calls_per_second, rate)
            for rate in (estimate.low, min(estimate.high, 1e6))
        )
    except BudgetError as error:
        return Tuning(f"{error}: keeping the schedule")
    rate = estimate.rate
    now_fresh = f"{_every(current)} keeps the copy fresh {freshness(rate, current):.0%} of the time"
    said = f"{estimate.text()}; {now_fresh}"
    # A source that never changed is not held by its interval: the interval's upper end
    # comes from how long it was watched, which only a longer interval lengthens (it would
    # stall a little above its declared interval); it climbs in damped steps instead.
    silent = estimate.changes == 0
    if not silent and ends[0] * (1 - UNMOVED) <= current <= ends[1] * (1 + UNMOVED):
        return Tuning(
            f"{said}; the estimate allows {_every(ends[0])} to {_every(ends[1])}: keeping it",
            target_seconds=target,
        )
    spread = abs(freshness(estimate.low, target) - freshness(estimate.high, target))
    if spread <= SURE_SPREAD:
        step, how, confidence = target, "straight to the best split", SURE_CONFIDENCE
    else:
        step = min(max(target, current * FASTER), current * SLOWER)
        how, confidence = f"a damped step towards {_every(target)}", STEP_CONFIDENCE
    step = min(max(step, seat.min_seconds), seat.max_seconds)
    if abs(step - current) <= UNMOVED * current:
        return Tuning(f"{said}; already at its share of the calls", target_seconds=target)
    reason = (
        f"{said}; {_every(step)} would keep it fresh {freshness(rate, step):.0%} "
        f"({how} of {per_hour(calls_per_second)} across the job's {len(seats)} endpoints)"
    )
    return Tuning(reason, round(step, 3), confidence, target)


def declared_budget(periods: Sequence[float]) -> float:
    """The calls per second a job's declared schedules make: the user's schedule is the
    budget."""
    return sum(1 / p for p in periods if p > 0)


LOOK_AGAIN_PERIODS = 3
"""The planner looks at an endpoint again after this many of its intervals: looking after
every call took damped steps on estimates too young (`bench.freshness`: 0.36 of the way from
even to best over 12 simulated hours, against 0.80 at three periods)."""
LOOK_AGAIN_FLOOR_SECONDS = 120.0
"""And at least a dwell (decision 0048) later."""


def _bounds(endpoint: Endpoint, now: datetime) -> tuple[float, float, float]:
    """The endpoint's baseline period, and the interval bounds the planner may move it within:
    without clamps it stays on its baseline (the clamps are the admin's permission)."""
    spec = endpoint.spec
    baseline = baseline_period(spec.schedule, now).total_seconds()
    low = max(spec.min_interval_seconds or baseline, spec.floor_seconds)
    return baseline, low, max(spec.max_interval_seconds or baseline, low)


def judge_freshness(
    endpoint: Endpoint,
    estimates: Mapping[str, RateEstimate | None],
    job: Sequence[Endpoint],
    now: datetime,
) -> HeuristicVerdict:
    """What the built-in planner makes of `endpoint`, one of the `job`'s endpoints, given the
    change-rate estimates known by endpoint id (the analysed one's among them; None: its
    answers cannot be compared, an id missing: not estimated yet)."""
    if endpoint.spec.schedule.after_upstreams:
        return HeuristicVerdict(
            "runs after its upstreams (depends_on): no schedule of its own to tune",
            AFTER_UPSTREAMS_LOOK_AGAIN_SECONDS,
        )
    current = current_interval(endpoint, now)
    again = look_again(current)
    retry_after = endpoint.retry_after_at
    if endpoint.failure_count > 0 or (retry_after is not None and retry_after > now):
        return HeuristicVerdict(
            "the endpoint is failing or asked to wait (Retry-After): left to the backoff",
            again,
        )
    if estimates.get(endpoint.id) is None:
        why = (
            "its answers cannot be compared (no body kept, or every field volatile)"
            if endpoint.id in estimates
            else "fewer than two compared calls"
        )
        return HeuristicVerdict(f"cannot estimate: {why}; keeping the schedule", again)
    own = [endpoint] + [
        e for e in job if e.id != endpoint.id and not e.spec.schedule.after_upstreams
    ]
    seats = []
    for each in own:
        _, low, high = _bounds(each, now)
        estimate = estimates.get(each.id)
        seats.append(Seat(current_interval(each, now), low, high, estimate))
    budget = declared_budget([_bounds(each, now)[0] for each in own])
    tuning = tuned(seats, 0, budget)
    step = tuning.interval_seconds
    if step is None:
        return HeuristicVerdict(tuning.reason, again, confidence=tuning.confidence)
    ttl = max(step * HINT_TTL_PERIODS, MIN_HINT_TTL_SECONDS)
    return HeuristicVerdict(tuning.reason, look_again(step), step, ttl, tuning.confidence)


def look_again(interval: float) -> float:
    """When the planner looks again at an endpoint called every `interval` seconds."""
    seconds = max(interval * LOOK_AGAIN_PERIODS, LOOK_AGAIN_FLOOR_SECONDS)
    return min(seconds, MAX_LOOK_AGAIN_SECONDS)
