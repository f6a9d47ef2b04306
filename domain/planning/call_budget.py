"""How a job's calls are best split across its endpoints (decision 0048).

A budget of B calls per second is split into call rates fᵢ (interval 1/fᵢ), each within its
endpoint's `[1/max_interval, 1/min_interval]`, to maximise the summed freshness Σ F(λᵢ, 1/fᵢ)
or to minimise the summed age, per endpoint (Cho & Garcia-Molina, Synchronizing a database to
improve freshness, SIGMOD 2000). The Lagrange condition gives every endpoint the same marginal
gain per call, μ: each fᵢ(μ) is found by bisection and μ so that Σ fᵢ(μ) = B. The optimum is
not proportional to λ: a source that changes much faster than it can be called is given up
(called at its bound), and one that never changes is called as rarely as allowed.

Age and freshness are weighed together by measuring age in periods of the even split (n/B
seconds for n endpoints): a job may mix feeds that must be picked up soon with pages that
should merely look current.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cronpilot.domain.model import Objective

_BISECTIONS = 64


@dataclass(frozen=True, slots=True)
class Source:
    """One endpoint as the split sees it."""

    rate: float
    """Changes per second (estimated)."""
    min_seconds: float
    max_seconds: float
    objective: Objective = Objective.FRESHNESS


class BudgetError(ValueError):
    """A budget the bounds cannot meet: one line that says which bound."""


def _gain(x: float) -> float:
    """1 - (1 + x)e^(-x): what one more call buys, as a share, at x = λ/f."""
    return -math.expm1(-x) - x * math.exp(-x)


def _marginal(source: Source, scale: float) -> Callable[[float], float]:
    """The gain of the objective per extra call per second at call rate f: falls as f grows.
    Freshness: g(λ/f)/λ; age (as its loss, over `scale`): (1/(2f²) - g(λ/f)/λ²)/scale."""
    rate = source.rate
    if rate <= 0:
        return lambda _f: 0.0
    if source.objective is Objective.FRESHNESS:
        return lambda f: _gain(rate / f) / rate
    return lambda f: (1 / (2 * f * f) - _gain(rate / f) / (rate * rate)) / scale


def _call_rate(marginal: Callable[[float], float], low: float, high: float, mu: float) -> float:
    """The call rate within [low, high] at which `marginal` is `mu` (bisection on its log)."""
    if marginal(high) >= mu:
        return high
    if marginal(low) <= mu:
        return low
    a, b = math.log(low), math.log(high)
    for _ in range(_BISECTIONS):
        middle = (a + b) / 2
        if marginal(math.exp(middle)) > mu:
            a = middle
        else:
            b = middle
    return math.exp((a + b) / 2)


def best_intervals(sources: Sequence[Source], calls_per_second: float) -> list[float]:
    """The interval of each source (seconds) that spends `calls_per_second` best. A budget
    above what the minimum intervals allow calls each at its minimum; one below what the
    maximum intervals allow raises `BudgetError`."""
    if not sources:
        return []
    least = sum(1 / s.max_seconds for s in sources)
    if calls_per_second < least * (1 - 1e-9):
        raise BudgetError(
            f"a budget of {per_hour(calls_per_second)} is below the "
            f"{per_hour(least)} the endpoints' max_interval allows"
        )
    most = sum(1 / s.min_seconds for s in sources)
    if calls_per_second >= most:
        return [s.min_seconds for s in sources]
    scale = len(sources) / calls_per_second
    marginals = [_marginal(s, scale) for s in sources]

    def spent(mu: float) -> list[float]:
        return [
            _call_rate(m, 1 / s.max_seconds, 1 / s.min_seconds, mu)
            for m, s in zip(marginals, sources, strict=True)
        ]

    top = max(m(1 / s.max_seconds) for m, s in zip(marginals, sources, strict=True))
    # Just above the largest marginal gain: a source whose gain is flat at it (one changing
    # far faster than it can be called) is then at its lowest rate at `high`, and the budget
    # left between `high` and `low` is shared out below rather than overspent.
    low, high = 0.0, max(top, 1e-300) * (1 + 1e-6)
    for _ in range(_BISECTIONS):
        mu = (low + high) / 2
        if sum(spent(mu)) > calls_per_second:
            low = mu
        else:
            high = mu
    under, over = spent(high), spent(low)
    # A source whose marginal gain is flat at μ (one changing far faster than it is called:
    # every call buys about 1/λ) jumps between the two; the budget left between them goes to
    # such sources in proportion, so that it is spent and never exceeded.
    short, extra = calls_per_second - sum(under), sum(over) - sum(under)
    share = 0.0 if extra <= 0 else min(1.0, max(0.0, short / extra))
    rates = [u + share * (o - u) for u, o in zip(under, over, strict=True)]
    return [1 / f for f in rates]


def even_intervals(sources: Sequence[Source], calls_per_second: float) -> list[float]:
    """The same calls spread evenly: every source at n/B seconds, within its bounds."""
    even = len(sources) / calls_per_second
    return [min(max(even, s.min_seconds), s.max_seconds) for s in sources]


_BUDGET = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*/\s*(s|m|min|h|d)\s*$")
_UNIT_SECONDS = {"s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86_400.0}


def parse_budget(text: str) -> float:
    """`600/h` → calls per second; a malformed or non-positive budget raises `BudgetError`."""
    matched = _BUDGET.match(text)
    if matched is None or float(matched.group(1)) <= 0:
        raise BudgetError(f"budget {text!r} is not a positive number of calls per s, m, h or d")
    return float(matched.group(1)) / _UNIT_SECONDS[matched.group(2)]


def per_hour(calls_per_second: float) -> str:
    """`600/h`: a budget as a jobs file writes it."""
    return f"{calls_per_second * 3600:.4g}/h"
