"""Freshness: does the planner spend its calls where they keep copies fresh? (issue 31)

    python -m bench.freshness [--days 1] [--seed 7]

Sources that change at random (Poisson) with known mean times between changes, from seconds to
a day and some never, all declared every 20 s within [5 s, 1 h]; 5 % of the calls fail. Time
is simulated (a float clock), days in seconds of CPU. Each planner decides on an endpoint when
it looks again (at least every dwell, 120 s):

- `fixed`: the declared schedule, never moved;
- `heuristic`: the streak planner (`domain.planning.heuristic.judge`: x2 after 3 identical answers,
  x0.5 after a change);
- `freshness`: the change-rate planner (`domain.planning.freshness_planner.tuned`, decision 0048).

For each: the freshness reached (the time-averaged share of copies equal to their source), the
same calls spread evenly, the best split of those calls for the true rates
(`domain.planning.call_budget`), the share of the way from even to best, calls per change seen, and
the shortest interval used. A second story switches two sources' rates halfway (a minute ↔ a day)
and reports the share of the way over each estimation window after the switch.
"""

from __future__ import annotations

import argparse
import math
import random
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from bench.support import print_header, print_table
from cronpilot.domain.model import Endpoint, EndpointSpec, IntervalHint, Schedule
from cronpilot.domain.planning.call_budget import Source, best_intervals, even_intervals
from cronpilot.domain.planning.change_rate import Look, RateEstimate, estimate, freshness
from cronpilot.domain.planning.freshness_planner import Seat, declared_budget, look_again, tuned
from cronpilot.domain.planning.heuristic import Observation, judge

DECLARED, MIN_SECONDS, MAX_SECONDS = 20.0, 5.0, 3600.0
DWELL = 120.0
FAILURE_SHARE = 0.05
HISTORY = 200
"""The calls an estimate is made from, as the planner reads them."""
NEVER = math.inf
STEADY = (3.0, 30.0, 60.0, 300.0, 1800.0, 7200.0, 86_400.0, NEVER, NEVER, NEVER)
"""Mean seconds between changes (the issue's ten sources)."""
SWITCHING = ((60.0, 86_400.0), (86_400.0, 60.0), (300.0, 300.0), (NEVER, NEVER))
"""(before, after) the switch halfway."""
T0 = datetime(2026, 11, 29, tzinfo=UTC)


def _rate(mean: float) -> float:
    return 0.0 if math.isinf(mean) else 1 / mean


@dataclass
class Copy:
    """One endpoint's simulated state."""

    means: tuple[float, float]
    interval: float = DECLARED
    next_call: float = 0.0
    last_ok: float | None = None
    version: int = 0
    seen: int = 0
    looks: deque[Look] = field(default_factory=lambda: deque(maxlen=HISTORY))
    answered: int = 0
    observed: deque[Observation] = field(default_factory=lambda: deque(maxlen=4))
    next_look: float = DWELL
    estimate: RateEstimate | None = None
    calls: int = 0
    changes_seen: int = 0
    fastest: float = DECLARED

    def rate_at(self, t: float, switch: float) -> float:
        return _rate(self.means[0] if t < switch else self.means[1])


Planner = Callable[[list[Copy], int, float], tuple[float | None, float]]
"""(copies, index, now) -> (interval to use or None, seconds until it looks again)."""


def fixed(_copies: list[Copy], _index: int, _now: float) -> tuple[float | None, float]:
    return None, 3600.0


def _endpoint(copy: Copy) -> Endpoint:
    spec = EndpointSpec(
        "e",
        "https://example.com",
        Schedule(interval_seconds=DECLARED),
        min_interval_seconds=MIN_SECONDS,
        max_interval_seconds=MAX_SECONDS,
    )
    hint = IntervalHint(copy.interval, T0 + timedelta(days=365), "bench")
    return Endpoint("e", "j", "j", spec, interval_hint=hint)


def heuristic(copies: list[Copy], index: int, _now: float) -> tuple[float | None, float]:
    copy = copies[index]
    verdict = judge(_endpoint(copy), list(reversed(copy.observed)), T0)
    return verdict.interval_seconds, verdict.look_again_seconds


def _seat(copy: Copy) -> Seat:
    return Seat(copy.interval, MIN_SECONDS, MAX_SECONDS, copy.estimate)


def planned(copies: list[Copy], index: int, _now: float) -> tuple[float | None, float]:
    copy = copies[index]
    copy.estimate = estimate(list(copy.looks))
    budget = declared_budget([DECLARED] * len(copies))
    step = tuned([_seat(c) for c in copies], index, budget).interval_seconds
    return step, look_again(step or copy.interval)


PLANNERS: dict[str, Planner] = {"fixed": fixed, "heuristic": heuristic, "freshness": planned}


@dataclass
class Outcome:
    fresh: float
    """Time-weighted freshness, summed over the copies (divide by their number)."""
    calls: int
    answered: int
    """The calls that were answered (the others failed: no copy was made)."""
    changes_seen: int
    fastest: float
    windows: list[float]
    """Freshness per window after the switch, summed over copies."""


def simulate(
    planner: Planner,
    means: Sequence[tuple[float, float]],
    seconds: float,
    seed: int,
    window: float,
) -> Outcome:
    """Every copy called on its interval; a planner look after a call once due. Freshness is
    the expected share over each gap (`freshness`), not sampled: less noise for the same days."""
    rng = random.Random(seed)
    switch = seconds / 2
    copies = [Copy(m, next_call=rng.uniform(0, DECLARED)) for m in means]
    fresh = 0.0
    windows = [0.0] * max(1, int((seconds - switch) // window))
    while True:
        index = min(range(len(copies)), key=lambda i: copies[i].next_call)
        copy = copies[index]
        now = copy.next_call
        if now >= seconds:
            break
        copy.calls += 1
        copy.fastest = min(copy.fastest, copy.interval)
        rate = copy.rate_at(now, switch)
        if rng.random() < FAILURE_SHARE:
            copy.observed.append(Observation(False, None))
        else:
            gap = now - copy.last_ok if copy.last_ok is not None else None
            if gap is not None:
                share = freshness(rate, gap)
                fresh += share * gap
                if now > switch:
                    slot = int((now - switch) // window)
                    if slot < len(windows):
                        windows[slot] += share * gap
                changed = rng.random() < -math.expm1(-rate * gap)
                copy.version += changed
                copy.changes_seen += changed
                copy.looks.append(Look(gap, changed))
                copy.answered += 1
            copy.observed.append(Observation(True, str(copy.version)))
            copy.last_ok = now
        if now >= copy.next_look:
            step, again = planner(copies, index, now)
            if step is not None:
                copy.interval = max(step, MIN_SECONDS)
            copy.next_look = now + max(again, DWELL)
        copy.next_call = now + copy.interval
    total = float(len(copies))
    return Outcome(
        fresh / (seconds * total),
        sum(c.calls for c in copies),
        sum(c.answered for c in copies),
        sum(c.changes_seen for c in copies),
        min(c.fastest for c in copies),
        [w / (window * total) for w in windows],
    )


def _split(rates: Sequence[float], calls_per_second: float) -> tuple[float, float]:
    """The freshness of the even and of the best split of those calls, for the true rates."""
    sources = [Source(r, MIN_SECONDS, MAX_SECONDS) for r in rates]
    even = even_intervals(sources, calls_per_second)
    best = best_intervals(sources, calls_per_second)
    average = len(rates)
    return (
        sum(freshness(r, i) for r, i in zip(rates, even, strict=True)) / average,
        sum(freshness(r, i) for r, i in zip(rates, best, strict=True)) / average,
    )


def _share(value: float, even: float, best: float) -> float:
    return (value - even) / (best - even) if best > even else 1.0


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    seconds = args.days * 86_400
    print_header(f"python -m bench.freshness --days {args.days:g} --seed {args.seed}")
    steady = [(m, m) for m in STEADY]
    rows = []
    for name, planner in PLANNERS.items():
        out = simulate(planner, steady, seconds, args.seed, seconds / 2)
        even, best = _split([_rate(m) for m in STEADY], out.answered / seconds)
        settled = out.windows[0]
        rows.append(
            [
                name,
                f"{out.fresh:.1%}",
                f"{settled:.1%}",
                f"{even:.1%}",
                f"{best:.1%}",
                f"{_share(out.fresh, even, best):.2f}",
                f"{_share(settled, even, best):.2f}",
                f"{out.calls:,}",
                f"{out.calls / max(out.changes_seen, 1):.1f}",
                f"{out.fastest:g}s",
            ]
        )
    headers = [
        "planner",
        "freshness",
        "2nd half",
        "even split",
        "best split",
        "share of the way",
        "2nd half",
        "calls",
        "calls per change seen",
        "shortest interval",
    ]
    print_table(f"ten steady sources, {args.days:g} simulated days", headers, rows)
    print()
    window = 7200.0
    rows = []
    after = [_rate(m[1]) for m in SWITCHING]
    for name, planner in PLANNERS.items():
        out = simulate(planner, SWITCHING, seconds, args.seed, window)
        half = seconds / 2
        _, best = _split(after, out.answered / seconds)
        below = [f"{best - w:.3f}" for w in out.windows[:6]]
        rows.append([name, f"{best:.1%}", *below])
    print_table(
        f"rates switched at {half / 3600:g} h: best split minus freshness, per {window:g} s "
        "window after",
        ["planner", "best split", *(f"w{i + 1}" for i in range(6))],
        rows,
    )


if __name__ == "__main__":
    main()
