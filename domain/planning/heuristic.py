"""The former built-in planner's rules (streaks of alike answers), no longer a planner that
runs (decision 0058): kept as the baseline that the freshness benchmark and the planner exams
measure the built-in planner against. Responses that stay the same relax the schedule towards
the max clamp, responses that change tighten it towards the min clamp, failures are left to
the governor's backoff.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from cronpilot.domain.model import Endpoint
from cronpilot.domain.planning.change_rate import current_interval
from cronpilot.domain.planning.freshness_planner import (
    AFTER_UPSTREAMS_LOOK_AGAIN_SECONDS,
    MAX_LOOK_AGAIN_SECONDS,
)
from cronpilot.domain.planning.freshness_planner import BuiltinVerdict as HeuristicVerdict
from cronpilot.domain.schedule.schedule import baseline_period

STEADY_RUNS = 3
"""Identical responses in a row before the schedule relaxes."""
STEP = 2.0
"""Each relax doubles the interval, each tighten halves it."""
LOOK_AGAIN_PERIODS = 3
BASE_CONFIDENCE = 0.6
"""The heuristic's confidence with no evidence; each run that agrees with its verdict adds
`EVIDENCE_STEP`, up to `MAX_CONFIDENCE` (decision 0029): three identical answers relax at
0.9, one change tightens at 0.7, three changes in a row at 0.9."""
EVIDENCE_STEP = 0.1
MAX_CONFIDENCE = 0.95

HINT_TTL_PERIODS = 10
"""The heuristic's step stands for this many of its own intervals, and at least
`MIN_HINT_TTL_SECONDS`."""
MIN_HINT_TTL_SECONDS = 3600.0
"""As long as the hourly rate window (decision 0029): a hint of a few seconds that lapsed
within a minute would fall back to the baseline and be stepped again, changes that the hourly
limit then stops."""


@dataclass(frozen=True, slots=True)
class Observation:
    """One finished run as the heuristic sees it (through the history tool)."""

    ok: bool
    body_hash: str | None


def _text(seconds: float) -> str:
    return f"{seconds:g}s"


def judge(
    endpoint: Endpoint, newest_first: Sequence[Observation], now: datetime
) -> HeuristicVerdict:
    """What the heuristic makes of an endpoint's recent runs (newest first)."""
    verdict = _judged(endpoint, newest_first, now)
    return replace(
        verdict, look_again_seconds=min(verdict.look_again_seconds, MAX_LOOK_AGAIN_SECONDS)
    )


def _judged(
    endpoint: Endpoint, newest_first: Sequence[Observation], now: datetime
) -> HeuristicVerdict:
    if endpoint.spec.schedule.after_upstreams:
        return HeuristicVerdict(
            "runs after its upstreams (depends_on): no schedule of its own to tune",
            AFTER_UPSTREAMS_LOOK_AGAIN_SECONDS,
        )
    current = current_interval(endpoint, now)
    look_again = current * LOOK_AGAIN_PERIODS
    if len(newest_first) < 2:
        return HeuristicVerdict("fewer than two finished runs: nothing to compare yet", look_again)
    if endpoint.failure_count > 0 or not newest_first[0].ok:
        return HeuristicVerdict("the endpoint is failing: left to the backoff", look_again)
    baseline = baseline_period(endpoint.spec.schedule, now).total_seconds()
    steady = newest_first[:STEADY_RUNS]
    if (
        len(steady) == STEADY_RUNS
        and len({o.body_hash for o in steady}) == 1
        and all(o.ok for o in steady)
    ):
        ceiling = endpoint.spec.max_interval_seconds or baseline
        target = min(current * STEP, ceiling)
        why = f"the last {STEADY_RUNS} responses were identical"
        verdict = _verdict(why, "relaxing", current, target, f"max {_text(ceiling)}")
        return _sure(verdict, _streak(newest_first, same=True))
    if newest_first[0].body_hash != newest_first[1].body_hash:
        floor = endpoint.spec.min_interval_seconds or baseline
        target = max(current / STEP, floor)
        why = "the response changed between the last two runs"
        verdict = _verdict(why, "tightening", current, target, f"min {_text(floor)}")
        return _sure(verdict, _streak(newest_first, same=False) - 1)
    return HeuristicVerdict("the responses are settling: keeping the schedule", look_again)


def _streak(newest_first: Sequence[Observation], *, same: bool) -> int:
    """How many of the newest runs in a row agree: answered alike (`same`), or each unlike
    the one before."""
    count = 1
    for newer, older in itertools.pairwise(newest_first):
        if (newer.body_hash == older.body_hash) is not same or not older.ok:
            break
        count += 1
    return count


def _sure(verdict: HeuristicVerdict, evidence: int) -> HeuristicVerdict:
    confidence = min(MAX_CONFIDENCE, BASE_CONFIDENCE + EVIDENCE_STEP * evidence)
    return replace(verdict, confidence=round(confidence, 4))


def _verdict(why: str, verb: str, current: float, target: float, bound: str) -> HeuristicVerdict:
    if target == current:
        return HeuristicVerdict(f"{why}; already at the {bound}", current * LOOK_AGAIN_PERIODS)
    reason = f"{why}; {verb} from every {_text(current)} to every {_text(target)} ({bound})"
    ttl = max(target * HINT_TTL_PERIODS, MIN_HINT_TTL_SECONDS)
    return HeuristicVerdict(reason, target * LOOK_AGAIN_PERIODS, target, ttl)
