"""How fresh a planner kept an exam's copies (decision 0048): the freshness its calls reached
for the exam's endpoints, beside the same number of calls spread evenly across them and split
best (`domain.planning.call_budget`).

The simulator answers as a function of the second but keeps no times at which an answer
changed as the store compares answers (without volatile and ignored fields): each endpoint's
change rate is estimated from the exam's own runs (`domain.planning.change_rate`), as the
freshness planner estimates it, and each gap between its calls counts F(λ̂, gap) of its length.
A DAG dependant, called when its upstreams are, spends no calls of its own and is left out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from cronpilot.domain.model import Endpoint, Run
from cronpilot.domain.planning.call_budget import Source, best_intervals, even_intervals
from cronpilot.domain.planning.change_rate import comparable_estimate, freshness, looks_of
from cronpilot.domain.planning.freshness_planner import interval_bounds

ESTIMATED = "estimated from the exam's runs: the simulator keeps no change times"


@dataclass(frozen=True, slots=True)
class Freshness:
    """Mean shares of the time the endpoints' copies were fresh."""

    reached: float
    """By the planner's calls."""
    even: float
    """By as many calls spread evenly (within each endpoint's bounds)."""
    best: float
    """By as many calls split best for the estimated rates."""
    endpoints: int
    calls: int
    """The compared calls (an answer after an answer) the estimates are made from."""
    changed: float
    """The share of them that saw a changed answer."""


def freshness_of(
    endpoints: Sequence[Endpoint],
    oldest_first: Mapping[str, Sequence[Run]],
    seconds: float,
    now: datetime,
) -> Freshness | None:
    """The freshness of `endpoints` from their runs (by endpoint id) over an exam of
    `seconds`; None when none of them has two answers to compare."""
    sources: list[Source] = []
    reached: list[float] = []
    calls = changes = 0
    for endpoint in endpoints:
        if endpoint.spec.schedule.after_upstreams:
            continue
        runs = oldest_first.get(endpoint.id, ())
        found = comparable_estimate(endpoint, runs[::-1])
        if found is None:
            continue
        looks = looks_of(endpoint, runs)
        spans = [look.seconds for look in looks if look.seconds > 0]
        reached.append(sum(freshness(found.rate, t) * t for t in spans) / sum(spans))
        _, low, high = interval_bounds(endpoint.spec, now)
        sources.append(Source(found.rate, low, high))
        calls += len(looks)
        changes += sum(look.changed for look in looks)
    if not sources:
        return None
    even = even_intervals(sources, calls / seconds)
    # The best split of the calls the even one makes: its bounds may have moved some.
    best = best_intervals(sources, sum(1 / every for every in even))
    return Freshness(
        sum(reached) / len(reached),
        _mean(sources, even),
        _mean(sources, best),
        len(sources),
        calls,
        changes / calls if calls else 0.0,
    )


def _mean(sources: Sequence[Source], intervals: Sequence[float]) -> float:
    shares = [freshness(s.rate, i) for s, i in zip(sources, intervals, strict=True)]
    return sum(shares) / len(shares)
