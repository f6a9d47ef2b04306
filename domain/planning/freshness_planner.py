"""The built-in planner's step (decision 0048): spend a job's calls where they keep its copies
fresh. Each endpoint's change rate is estimated from its calls (`domain.planning.change_rate`), the
job's budget of calls is split across its endpoints (`domain.planning.call_budget`), and the
analysed endpoint moves towards its share:

- only when the estimate's interval excludes the current interval (the best intervals for
  the low and the high end of the rate both lie on one side of it), or it never changed in
  `SILENT_CALLS` calls;
- at least to the nearer of those two intervals (decision 0060: what the estimate excludes is
  no step in the dark), within x0.6-x1.4 of the current interval beyond it while the estimate
  is uncertain (Apache Nutch's adaptive schedule warns that steps past +-40 % destabilise it),
  straight to the target once it is sure: when the freshness at the target under either end
  of the estimate's interval differs by at most `SURE_SPREAD`;
- never back within a dwell: a step against the direction of the endpoint's last change waits
  until that change has stood the dwell; and never to a longer interval with the hour's last
  `KEPT_CHANGES` changes, kept for a step back;
- a source climbed on its silence (its last change lengthened its interval, which it still
  has, and it showed no change before that change) that has changed since, at most
  `FEW_CHANGES` times, goes straight back to its share at the point estimate, whatever the
  estimate's interval allows: the climb was made in damped steps no estimate bounded, and its
  first changes are too few to exclude the interval that silence reached.

Pure: the caller supplies the job's endpoints as `Seat`s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from cronpilot.domain.model import Endpoint, EndpointSpec, Objective
from cronpilot.domain.planning.call_budget import (
    BudgetError,
    Source,
    best_intervals,
    parse_budget,
    per_hour,
)
from cronpilot.domain.planning.change_rate import (
    RateEstimate,
    current_interval,
    duration_text,
    freshness,
)
from cronpilot.domain.planning.planning import Proposal, ProposalKind, ProposalStatus
from cronpilot.domain.schedule.schedule import baseline_period

SLOWER, FASTER = 1.4, 0.6
"""The most an uncertain step moves an interval."""
SILENT_CALLS = 8
"""A source that never changed climbs only once it has been silent this many calls: a source
changing every minute, called every 20 s, is silent for its first four calls a quarter of the
time, and climbed on that it spent the hour's changes going away and coming back
(`bench.freshness`, 70 simulated minutes, six seeds: least share 0.75 after 4 silent calls;
after 8 and after 12 the same within the seeds' spread, mean 0.82, and 8 at 20 s is under
three minutes). The calls are compared ones: eight of them take nine answers."""
KEPT_CHANGES = 2
"""The hour's last changes the guardrails allow (`planner_max_changes_per_hour`) are kept for
a step to a shorter interval: a source climbed while silent that starts to change comes back
within the hour (3 simulated hours, five seeds, silence then believed after 12 calls: least
share 0.82 without, 0.85 with it)."""
FEW_CHANGES = 2
"""Changes after a climb that end the silence it was made on (1, 2 or 3: the same figures);
with more, the estimate's own interval decides (decision 0061). Over 30 simulated minutes,
twelve seeds, the share from 5 minutes on went from 0.806 to 0.818 (a 300-s source, silent for
its first 8 calls more often than not, no longer stays at 40-80 s once it changes); 70
minutes, six seeds: mean 0.818 to 0.830; 3 hours, five seeds: 0.858 to 0.859."""
UNMOVED = 0.05
"""A target within this share of the current interval is no change worth making."""
SURE_SPREAD = 0.05
"""The estimate is sure of a target when the freshness there at either end of its interval
differs by at most this much: more calls would not change the step."""
SURE_CONFIDENCE, STEP_CONFIDENCE = 0.95, 0.8
"""The confidence of a step straight to a target it is sure of, and of any other step (damped,
or to the edge of what the estimate allows) (`domain.planning.autonomy`)."""
KEEP_CONFIDENCE = 0.6
"""The confidence of a look that proposes nothing."""
STEP_TTL_SECONDS = 86_400.0
"""A step of this planner stands a day (or the admin's `planner_max_hint_ttl_seconds` where
that is shorter), twice as long as it waits between two looks at most (`look_again`). A look
that agrees with the
interval in force proposes nothing (the same interval is "already in force"), so a shorter
hint lapsed while the planner still held it right: the endpoint fell back to its declared
schedule and was stepped back in damped steps (`bench.freshness`, ten periods and at least an
hour: every tuned source back at 20 s each hour, the 3-s one called every 10 s instead of 5 s
for the next half hour). A planner that stops leaves its endpoints on its last step for a day
at most."""
FAILING_LOOK_AGAIN_SECONDS = 60.0
"""A failing endpoint is left to the backoff, and looked at again this soon (or after one of
its intervals, when that is longer): with 5 % of calls failing a look put off by the whole wait
(two minutes or more) cost each source a step now and then."""
AFTER_UPSTREAMS_LOOK_AGAIN_SECONDS = 3600.0
"""A DAG dependant has nothing the planner could change; it is looked at rarely."""
MAX_LOOK_AGAIN_SECONDS = STEP_TTL_SECONDS
"""The longest a planner waits before it looks again (`submit_analysis` allows no more): three
periods of a daily cron would be three days."""


@dataclass(frozen=True, slots=True)
class BuiltinVerdict:
    """What the built-in planner makes of one endpoint: why, when to look again, and the
    interval to propose (None: leave the schedule alone) with its ttl."""

    reasoning: str
    look_again_seconds: float
    interval_seconds: float | None = None
    ttl_seconds: float | None = None
    confidence: float = KEEP_CONFIDENCE


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


def tuned(
    seats: Sequence[Seat],
    index: int,
    calls_per_second: float,
    changes_left: int | None = None,
    *,
    climbed_on_silence: bool = False,
) -> Tuning:
    """The step for `seats[index]` under a budget of `calls_per_second` for the whole job;
    `changes_left`: the changes the guardrails still allow it this hour (None: no limit);
    `climbed_on_silence`: its interval is a lengthening made before it showed any change."""
    seat = seats[index]
    estimate = seat.estimate
    current = seat.current_seconds
    if estimate is None or estimate.calls < 2:
        return Tuning("fewer than two compared calls: nothing to estimate yet")
    # When every call saw a change the rate's upper end is unbounded (or, by rounding, a huge
    # finite number), and the split gives up a source that changes far faster than it can be
    # called: the interval would span "give it up", and the planner keep an interval that
    # misses most changes. Only calls closer together tell the two apart, so the point
    # estimate (finite) bounds it instead.
    high = estimate.rate if estimate.changes >= estimate.calls else estimate.high
    try:
        target = _target(seats, index, calls_per_second, None)
        ends = sorted(
            _target(seats, index, calls_per_second, rate) for rate in (estimate.low, high)
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
    if silent_calls_missing(estimate):
        return Tuning(
            f"{said}; silent for fewer than {SILENT_CALLS} calls: keeping it",
            target_seconds=target,
        )
    back = min(max(target, seat.min_seconds), seat.max_seconds)
    broken = (
        climbed_on_silence
        and 0 < estimate.changes <= FEW_CHANGES
        and back < current * (1 - UNMOVED)
    )
    allowed = ends[0] * (1 - UNMOVED) <= current <= ends[1] * (1 + UNMOVED)
    if not silent and not broken and allowed:
        return Tuning(
            f"{said}; the estimate allows {_every(ends[0])} to {_every(ends[1])}: keeping it",
            target_seconds=target,
        )
    spread = abs(freshness(estimate.low, target) - freshness(high, target))
    if broken:
        said = f"{said}; it changed after its interval was lengthened on its silence"
        step, how, confidence = target, "straight back to the best split", STEP_CONFIDENCE
    elif spread <= SURE_SPREAD:
        step, how, confidence = target, "straight to the best split", SURE_CONFIDENCE
    else:
        # Damped, but straight to the edge of what the estimate allows where that lies past
        # the damped step: an interval the estimate excludes is no step in the dark. A silent
        # source's edge only follows how long it was watched: it climbs in damped steps.
        faster = target < current
        damped = current * (FASTER if faster else SLOWER)
        edge = ends[1] if faster else ends[0]
        beyond = not silent and (edge < damped if faster else edge > damped)
        reach = edge if beyond else damped
        step = max(reach, target) if faster else min(reach, target)
        if step == target:
            how = "one step to the best split"
        elif beyond:
            how = f"to the edge of what the estimate allows, towards {_every(target)}"
        else:
            how = f"a damped step towards {_every(target)}"
        confidence = STEP_CONFIDENCE
    clamped = min(max(step, seat.min_seconds), seat.max_seconds)
    if clamped != step:
        step, how = clamped, f"{how}, clamped to {_every(clamped)}"
    if abs(step - current) <= UNMOVED * current:
        return Tuning(f"{said}; already at its share of the calls", target_seconds=target)
    if step > current and changes_left is not None and changes_left <= KEPT_CHANGES:
        kept = (
            f"the hour's last {changes_left} change(s) are kept for a step back"
            if changes_left > 0
            else "no change is left this hour"
        )
        return Tuning(
            f"{said}; {_every(step)} would call it less often, but {kept}",
            target_seconds=target,
        )
    reason = (
        f"{said}; {_every(step)} would keep it fresh {freshness(rate, step):.0%} "
        f"({how} of {per_hour(calls_per_second)} across the job's {len(seats)} endpoints)"
    )
    return Tuning(reason, round(step, 3), confidence, target)


def silent_calls_missing(estimate: RateEstimate) -> int:
    """The calls a source that never changed must still be silent for before it climbs."""
    return max(SILENT_CALLS - estimate.calls, 0) if estimate.changes == 0 else 0


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


def interval_bounds(spec: EndpointSpec, now: datetime) -> tuple[float, float, float]:
    """The endpoint's baseline period, and the interval bounds the planner may move it within:
    without clamps it stays on its baseline (the clamps are the admin's permission)."""
    baseline = baseline_period(spec.schedule, now).total_seconds()
    low = max(spec.min_interval_seconds or baseline, spec.floor_seconds)
    return baseline, low, max(spec.max_interval_seconds or baseline, low)


def budget_of(budget: str | None, specs: Sequence[EndpointSpec], now: datetime) -> float:
    """The calls per second the built-in planner spends across a job's endpoints: its
    `budget`, else what their declared schedules make (a DAG dependant, called when its
    upstreams are, spends none). Raises `BudgetError` for a malformed budget, or one below
    what their `max_interval`s allow."""
    bounds = [interval_bounds(s, now) for s in specs if not s.schedule.after_upstreams]
    if budget is None:
        return declared_budget([baseline for baseline, _, _ in bounds])
    calls = parse_budget(budget)
    least = sum(1 / high for _, _, high in bounds)
    if calls < least * (1 - 1e-9):
        raise BudgetError(
            f"budget {budget} is below the {per_hour(least)} the endpoints' max_interval "
            "allows (each is called at least once per max_interval, or per its interval "
            "without one)"
        )
    return calls


@dataclass(frozen=True, slots=True)
class LastMove:
    """The endpoint's last applied interval change: when, from which interval to which."""

    at: datetime
    before: float
    after: float


def _applied(proposal: Proposal) -> datetime:
    return proposal.decided_at or proposal.created_at


def last_move(newest_first: Sequence[Proposal], baseline: float) -> LastMove | None:
    """The last interval change among an endpoint's proposals (newest first), whoever made
    it. It moved from the change before it while that one's ttl still ran, else from the
    baseline."""
    changes = [
        p
        for p in newest_first
        if p.status is ProposalStatus.APPLIED
        and p.kind is ProposalKind.INTERVAL
        and p.interval_seconds is not None
    ]
    if not changes:
        return None
    last, *older = changes
    assert last.interval_seconds is not None
    before = baseline
    if older:
        previous = older[0]
        lapsed = _applied(previous) + timedelta(seconds=previous.ttl_seconds or 0)
        if previous.interval_seconds is not None and lapsed > _applied(last):
            before = previous.interval_seconds
    return LastMove(_applied(last), before, last.interval_seconds)


def back_until(
    step: float, current: float, move: LastMove, now: datetime, dwell_seconds: float
) -> datetime | None:
    """Until when a step from `current` to `step` waits because it would undo the direction
    of the last change `move` before that change has stood its dwell, or None."""
    until = move.at + timedelta(seconds=dwell_seconds)
    against = (step - current) * (move.after - move.before) < 0
    return until if against and until > now else None


def _job_seats(
    endpoint: Endpoint,
    estimates: Mapping[str, RateEstimate | None],
    job: Sequence[Endpoint],
    now: datetime,
    budget: str | None,
) -> tuple[list[Seat], float]:
    """The job's endpoints with a schedule of their own as seats, `endpoint` first, and the
    calls per second they may make (`budget_of`)."""
    own = [endpoint] + [
        e for e in job if e.id != endpoint.id and not e.spec.schedule.after_upstreams
    ]
    seats = []
    for each in own:
        _, low, high = interval_bounds(each.spec, now)
        current = current_interval(each, now)
        seats.append(Seat(current, low, high, estimates.get(each.id), each.spec.objective))
    return seats, budget_of(budget, [each.spec for each in own], now)


@dataclass(frozen=True, slots=True)
class Suggestion:
    """The built-in planner's suggestion for one endpoint: the interval the best split of the
    job's calls gives it, for an LLM planner's brief and for graded autonomy to weigh its
    proposals against (`domain.planning.autonomy`)."""

    estimate: RateEstimate
    current_seconds: float
    suggested_seconds: float
    calls_per_second: float
    endpoints: int

    def text(self) -> str:
        """`every 6 min would keep the copy fresh 95 % of the time (every 20 s now: 99 %),
        the best split of 360/h across the job's 2 endpoints`."""
        rate = self.estimate.rate
        now, best = self.current_seconds, self.suggested_seconds
        return (
            f"{_every(best)} would keep the copy fresh {freshness(rate, best):.0%} of the time "
            f"({_every(now)} now: {freshness(rate, now):.0%}), the best split of "
            f"{per_hour(self.calls_per_second)} across the job's {self.endpoints} endpoints"
        )


def suggestion(
    endpoint: Endpoint,
    estimates: Mapping[str, RateEstimate | None],
    job: Sequence[Endpoint],
    now: datetime,
    budget: str | None = None,
) -> Suggestion | None:
    """The interval the best split of the job's calls (its `budget`, or what its declared
    schedules make) gives `endpoint`, or None when it has no schedule of its own, cannot be
    estimated, or the budget cannot be split."""
    estimate = estimates.get(endpoint.id)
    if endpoint.spec.schedule.after_upstreams or estimate is None or estimate.calls < 2:
        return None
    try:
        seats, calls = _job_seats(endpoint, estimates, job, now, budget)
        best = best_intervals([_source(seat) for seat in seats], calls)[0]
    except BudgetError:
        return None
    return Suggestion(estimate, seats[0].current_seconds, best, calls, len(seats))


def judge_freshness(
    endpoint: Endpoint,
    estimates: Mapping[str, RateEstimate | None],
    job: Sequence[Endpoint],
    now: datetime,
    *,
    budget: str | None = None,
    move: LastMove | None = None,
    dwell_seconds: float = 0.0,
    max_ttl_seconds: float = STEP_TTL_SECONDS,
    changes_left: int | None = None,
    silent_before_move: bool = False,
) -> BuiltinVerdict:
    """What the built-in planner makes of `endpoint`, one of the `job`'s endpoints, given the
    change-rate estimates known by endpoint id (the analysed one's among them; None: its
    answers cannot be compared, an id missing: not estimated yet), and the endpoint's last
    interval change, which a step does not undo within `dwell_seconds`. `budget`: the job's,
    as the jobs file writes it (None: what the declared schedules make). `max_ttl_seconds`:
    the longest hint the guardrails take (`planner_max_hint_ttl_seconds`).
    `silent_before_move`: the endpoint's answers showed no change before that last change
    (`change_rate.silent_until`)."""
    ttl = min(STEP_TTL_SECONDS, max_ttl_seconds)
    if endpoint.spec.schedule.after_upstreams:
        return BuiltinVerdict(
            "runs after its upstreams (depends_on): no schedule of its own to tune",
            AFTER_UPSTREAMS_LOOK_AGAIN_SECONDS,
        )
    current = current_interval(endpoint, now)
    again = look_again(current, ttl)
    retry_after = endpoint.retry_after_at
    if endpoint.failure_count > 0 or (retry_after is not None and retry_after > now):
        return BuiltinVerdict(
            "the endpoint is failing or asked to wait (Retry-After): left to the backoff",
            min(again, max(FAILING_LOOK_AGAIN_SECONDS, current)),
        )
    estimate = estimates.get(endpoint.id)
    if estimate is None:
        if endpoint.id in estimates:
            why = (
                "its answers cannot be compared (no body kept, or every field volatile or ignored)"
            )
            return BuiltinVerdict(f"cannot estimate: {why}; keeping the schedule", again)
        # Nothing changed, so no dwell to wait: look again once a few calls have come.
        soon = min(current * LOOK_AGAIN_PERIODS, MAX_LOOK_AGAIN_SECONDS)
        return BuiltinVerdict(
            "cannot estimate: fewer than two compared calls; keeping the schedule", soon
        )
    try:
        seats, calls = _job_seats(endpoint, estimates, job, now, budget)
    except BudgetError as error:
        return BuiltinVerdict(f"{error}: keeping the schedule", again)
    climbed = (
        move is not None
        and silent_before_move
        and move.after > move.before
        and abs(current - move.after) <= UNMOVED * current
    )
    tuning = tuned(seats, 0, calls, changes_left, climbed_on_silence=climbed)
    step = tuning.interval_seconds
    if step is None:
        # Nothing changed, so no dwell to wait: an estimate of one call (two answers that
        # differed, at a start that caught up a missed slot), or a silent source, is looked at
        # again once the calls it lacks have come.
        missing = 2 - estimate.calls if estimate.calls < 2 else silent_calls_missing(estimate)
        soon = min(again, missing * current) if missing else again
        return BuiltinVerdict(tuning.reason, soon, confidence=tuning.confidence)
    waits = None if move is None else back_until(step, current, move, now, dwell_seconds)
    if move is not None and waits is not None:
        reason = (
            f"{tuning.reason}; not yet: it would undo the last change (to "
            f"{_every(move.after)}) before its dwell ends at {waits.isoformat()}"
        )
        return BuiltinVerdict(reason, again, confidence=tuning.confidence)
    return BuiltinVerdict(tuning.reason, look_again(step, ttl), step, ttl, tuning.confidence)


def look_again(interval: float, ttl: float = STEP_TTL_SECONDS) -> float:
    """When the planner looks again at an endpoint called every `interval` seconds: within half
    the `ttl` of its steps, so that a step it still holds right does not lapse first."""
    seconds = max(interval * LOOK_AGAIN_PERIODS, LOOK_AGAIN_FLOOR_SECONDS)
    return min(seconds, max(ttl / 2, LOOK_AGAIN_FLOOR_SECONDS))
