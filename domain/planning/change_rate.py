"""How often an endpoint's answer changes, estimated from its calls (decision 0048).

A source is modelled as changing at random, a Poisson process of rate λ. A call `t` seconds
after the previous one sees "changed" with probability 1 - e^(-λt); the body itself is never
needed, only whether it differs from the previous answer (`domain.graph.change_detection`).

- Calls at regular intervals I: Cho & Garcia-Molina's estimator (Estimating frequency of
  change, ACM TOIT 2003) λ̂ = -ln((n - X + 0.5)/(n + 0.5)) / I, X changes seen in n calls:
  finite when every call saw a change, and less biased than the naive X/(nI).
- Irregular intervals: the maximum-likelihood rate, the root of the score equation
  Σ_changed tᵢ/(e^(λtᵢ) - 1) = Σ_unchanged tⱼ, found by bisection.
- A confidence interval from the number of calls (Wilson's interval on the share of calls
  that saw a change, mapped back to a rate).
- A change point: when the recent calls and the older ones give intervals that do not meet,
  the rate moved, and the estimate restarts from the recent window.

Pure: the caller supplies the calls.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from cronpilot.domain.graph.change_detection import (
    comparable_hash,
    ignored_fields,
    nothing_compared,
)
from cronpilot.domain.model import Endpoint, Run, RunStatus
from cronpilot.domain.schedule.schedule import baseline_period

Z = 1.96
"""The normal quantile of a 95 % confidence interval."""
SHIFT_STATISTIC = 16.0
"""The likelihood ratio (2 ln Λ) past which the rate moved: every split of the calls is a
test, and at the 95 % of one test (3.84) a steady source of a few hundred calls would seem to
move on every look."""
REGULAR_SPREAD = 0.1
"""Calls whose gaps differ from their mean by at most this share are regular."""
MIN_WINDOW = 8
"""The fewest older calls a change point is judged against."""
MIN_RECENT = 3
"""The fewest recent calls a restarted estimate is made from: three changes in a row of a
source silent for a hundred calls say enough (the likelihood ratio judges)."""
_BISECTIONS = 200


@dataclass(frozen=True, slots=True)
class Look:
    """One call after a previous one: how long after it, and whether the answer changed."""

    seconds: float
    changed: bool


@dataclass(frozen=True, slots=True)
class RateEstimate:
    """An endpoint's estimated change rate (changes per second), with a 95 % interval."""

    rate: float
    low: float
    high: float
    calls: int
    """The calls the estimate is made from (after a restart, the recent window's)."""
    changes: int
    mean_seconds: float
    """The mean gap between those calls."""
    restarted: bool = False
    """The rate moved: the estimate is the recent window's alone."""

    def covers(self, rate: float) -> bool:
        return self.low <= rate <= self.high

    def text(self) -> str:
        """`changes about every 4 min (12 changes seen in 50 calls)`."""
        seen = f"({self.changes} changes seen in {self.calls} calls)"
        if self.rate <= 0:
            return f"no change seen {seen}"
        restarted = "; the rate moved, estimated from the recent calls" if self.restarted else ""
        return f"changes about every {duration_text(1 / self.rate)} {seen}{restarted}"


def looks_of(endpoint: Endpoint, oldest_first: Sequence[Run]) -> list[Look]:
    """The looks an endpoint's successful runs make, each against the one before, compared as
    `only_if_changed` compares them (without volatile and ignored fields). A failed call, or
    one whose body was not read, says nothing about the source and is passed over."""
    ignored = ignored_fields(endpoint)
    looks: list[Look] = []
    before: tuple[Run, str] | None = None
    for run in oldest_first:
        digest = comparable_hash(run, ignored) if run.status is RunStatus.SUCCESS else None
        if digest is None:
            continue
        if before is not None:
            seconds = (run.started_at - before[0].started_at).total_seconds()
            looks.append(Look(seconds, digest != before[1]))
        before = (run, digest)
    return looks


def silent_until(endpoint: Endpoint, newest_first: Sequence[Run], at: datetime) -> bool:
    """The endpoint's answers up to `at` (among its runs, newest first) compared at least once
    and never changed."""
    looks = looks_of(endpoint, [run for run in reversed(newest_first) if run.started_at <= at])
    return bool(looks) and not any(look.changed for look in looks)


def comparable_estimate(endpoint: Endpoint, newest_first: Sequence[Run]) -> RateEstimate | None:
    """The endpoint's estimate from its newest runs (newest first); None when fewer than two
    answers compare or nothing in them is compared (`nothing_compared`): answers that look the
    same whatever the source does would read as "no change seen"."""
    answered = [run for run in newest_first if run.status is RunStatus.SUCCESS]
    if nothing_compared(endpoint, answered):
        return None
    return estimate(looks_of(endpoint, list(reversed(newest_first))))


def change_text(endpoint: Endpoint, newest_first: Sequence[Run], now: datetime) -> str:
    """`changes about every 4 min (12 changes seen in 50 calls); every 90 s keeps the copy
    fresh 72 % of the time` from the endpoint's newest runs (newest first), or why not."""
    found = comparable_estimate(endpoint, newest_first)
    if found is None:
        return (
            "not estimated (fewer than two answers that can be compared: no body kept, or "
            "every field volatile or ignored)"
        )
    if endpoint.spec.schedule.after_upstreams:
        # A DAG dependant runs when its upstreams do: no interval of its own to judge.
        return found.text()
    every = current_interval(endpoint, now)
    share = freshness(found.rate, every)
    return (
        f"{found.text()}; every {duration_text(every)} keeps the copy fresh {share:.0%} of the time"
    )


def current_interval(endpoint: Endpoint, now: datetime) -> float:
    """The interval in force: a fresh interval hint, else the baseline's period."""
    hint = endpoint.interval_hint
    if hint is not None and hint.expires_at > now:
        return hint.interval_seconds
    return baseline_period(endpoint.spec.schedule, now).total_seconds()


def duration_text(seconds: float) -> str:
    """`45 s`, `4 min`, `3.5 h`, `2 d`: a period as a person reads it."""
    for unit, size in (("d", 86_400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= size:
            return f"{seconds / size:.2g} {unit}"
    return f"{seconds:.2g} s"


def regular_rate(calls: int, changes: int, interval_seconds: float) -> float:
    """Cho & Garcia-Molina's estimator for `calls` made every `interval_seconds`, `changes`
    of which saw a change."""
    if calls <= 0 or interval_seconds <= 0:
        return 0.0
    return max(0.0, -math.log((calls - changes + 0.5) / (calls + 0.5)) / interval_seconds)


def likeliest_rate(looks: Sequence[Look]) -> float:
    """The maximum-likelihood rate for irregular gaps: the root of the score equation, which
    falls from +∞ to -Σ_unchanged tⱼ as λ grows. With no unchanged call it has none (the rate
    is unbounded) and with no change it is 0: then the regular estimator on the mean gap."""
    changed = [look.seconds for look in looks if look.changed and look.seconds > 0]
    quiet = sum(look.seconds for look in looks if not look.changed)
    if not changed or quiet <= 0:
        mean = sum(look.seconds for look in looks) / len(looks) if looks else 0.0
        return regular_rate(len(looks), len(changed), mean)

    def score(rate: float) -> float:
        return sum(t / math.expm1(min(rate * t, 700.0)) for t in changed) - quiet

    low, high = 0.0, 1.0 / min(changed)
    while score(high) > 0:
        high *= 2
    for _ in range(_BISECTIONS):
        middle = (low + high) / 2
        if score(middle) > 0:
            low = middle
        else:
            high = middle
        if high - low <= 1e-12 * high:
            break
    return (low + high) / 2


def _wilson(calls: int, changes: int) -> tuple[float, float]:
    share = changes / calls
    spread = Z * math.sqrt(share * (1 - share) / calls + Z * Z / (4 * calls * calls))
    centre = share + Z * Z / (2 * calls)
    scale = 1 + Z * Z / calls
    return max(0.0, (centre - spread) / scale), min(1.0, (centre + spread) / scale)


def _rate_of_share(share: float, mean_seconds: float) -> float:
    if share >= 1.0:
        return math.inf
    return -math.log1p(-share) / mean_seconds


def _regular(looks: Sequence[Look]) -> bool:
    gaps = [look.seconds for look in looks]
    mean = sum(gaps) / len(gaps)
    return all(abs(gap - mean) <= REGULAR_SPREAD * mean for gap in gaps)


def _estimated(looks: Sequence[Look], *, restarted: bool = False) -> RateEstimate:
    calls = len(looks)
    changes = sum(look.changed for look in looks)
    mean = sum(look.seconds for look in looks) / calls
    on_mean = regular_rate(calls, changes, mean)
    rate = on_mean if _regular(looks) else likeliest_rate(looks)
    low_share, high_share = _wilson(calls, changes)
    low, high = _rate_of_share(low_share, mean), _rate_of_share(high_share, mean)
    if on_mean > 0 and rate != on_mean:
        # Irregular gaps: the interval keeps its width relative to the estimate, which the
        # mean gap alone would bias (e^(-λt) is convex in t).
        low, high = low * rate / on_mean, high * rate / on_mean
    low, high = min(rate, low), max(rate, high)
    return RateEstimate(rate, low, high, calls, changes, mean, restarted)


def estimate(looks: Sequence[Look], window: int = MIN_WINDOW) -> RateEstimate | None:
    """The change rate of an endpoint from its `looks`, oldest first; None without any. When
    the calls split in two (at least `window` older calls, `MIN_RECENT` recent ones) whose
    rates clearly differ, the rate moved: the estimate is the recent side's."""
    looks = [look for look in looks if look.seconds > 0]
    if not looks:
        return None
    start = _change_point(looks, window)
    if start is None:
        return _estimated(looks)
    return _estimated(looks[start:], restarted=True)


def _change_point(looks: Sequence[Look], window: int) -> int | None:
    """Where the rate moved, if it did: the split whose two sides' shares of changed calls
    differ the most by a likelihood-ratio test, past `SHIFT_STATISTIC`, from running counts (a
    few hundred calls cost a few hundred steps)."""
    changes = [0]
    for look in looks:
        changes.append(changes[-1] + look.changed)
    total, seen = len(looks), changes[-1]
    pooled = _log_likelihood(total, seen)
    best, strongest = None, SHIFT_STATISTIC
    for start in range(window, total - MIN_RECENT + 1):
        before = changes[start]
        statistic = 2 * (
            _log_likelihood(start, before) + _log_likelihood(total - start, seen - before) - pooled
        )
        if statistic > strongest:
            best, strongest = start, statistic
    return best


def _log_likelihood(calls: int, changes: int) -> float:
    """Of `changes` in `calls` at their own share (the terms of a certain outcome are 0)."""
    share = changes / calls
    changed = changes * math.log(share) if changes else 0.0
    quiet = (calls - changes) * math.log1p(-share) if changes < calls else 0.0
    return changed + quiet


def freshness(rate: float, interval_seconds: float) -> float:
    """The share of the time a copy refreshed every `interval_seconds` equals a source changing
    at `rate`: F = (1 - e^(-λI)) / (λI) (Cho & Garcia-Molina, SIGMOD 2000)."""
    x = rate * interval_seconds
    if x <= 1e-12:
        return 1.0
    return -math.expm1(-x) / x


def age(rate: float, interval_seconds: float) -> float:
    """The time-averaged age of such a copy, in seconds (how long it has been stale, 0 while
    fresh): I/2 - 1/λ + (1 - e^(-λI)) / (λ²I)."""
    x = rate * interval_seconds
    if x <= 1e-6:
        # The series: λI²/6 - λ²I³/24, without the cancellation of the closed form.
        return rate * interval_seconds**2 / 6 * (1 - x / 4)
    return interval_seconds / 2 - 1 / rate + -math.expm1(-x) / (rate * x)
