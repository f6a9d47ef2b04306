"""Graded autonomy and churn, pure (decision 0029): the threshold's rule and its bounds, the
cool-down of what alternates, and how far a proposal departs from the built-in planner's
suggestion (what is in force: `test_guardrails`)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from cronpilot.domain.model import Endpoint, EndpointSpec, Schedule
from cronpilot.domain.planning.autonomy import (
    MAX_THRESHOLD,
    MIN_THRESHOLD,
    START_THRESHOLD,
    AutonomyStep,
    Gate,
    Gated,
    Suggested,
    departure,
    gate,
    learnt,
    moves,
    weighed,
)
from cronpilot.domain.planning.churn import cooling
from cronpilot.domain.planning.planning import Proposal, ProposalDraft, ProposalKind, ProposalStatus

NOW = datetime(2030, 1, 1, tzinfo=UTC)


def _steps(decisions: str) -> list[AutonomyStep]:
    """`a` approved, `r` rejected, in order."""
    steps: list[AutonomyStep] = []
    for i, decision in enumerate(decisions):
        at = NOW + timedelta(seconds=i)
        steps.append(learnt(steps[-1] if steps else None, "j", decision == "a", f"p{i}", at))
    return steps


@pytest.mark.parametrize(
    ("decisions", "threshold"),
    [
        ("aaaa", START_THRESHOLD),
        ("aaaaa", 0.87),
        ("aaaar", 0.90),
        ("aaarr", 0.93),
        ("rrrrr", MAX_THRESHOLD),
        ("a" * 25, MIN_THRESHOLD),
    ],
)
def test_the_threshold_moves_once_every_five_decisions(decisions: str, threshold: float) -> None:
    assert _steps(decisions)[-1].threshold == threshold


def test_the_moves_are_the_steps_that_changed_the_threshold() -> None:
    steps = _steps("aaaaa" + "aaaa" + "r" + "aa")
    assert [s.proposal_id for s in moves(steps)] == ["p4", "p9"]
    assert [s.threshold for s in moves(steps)] == [0.87, 0.85]


def _made(*intervals: float, status: ProposalStatus = ProposalStatus.APPLIED) -> list[Proposal]:
    """Interval proposals a minute apart, newest first."""
    return [
        Proposal(
            f"p{i}",
            "e1",
            "j1",
            ProposalKind.INTERVAL,
            "r",
            "heuristic",
            NOW + timedelta(minutes=i),
            status,
            interval_seconds=seconds,
        )
        for i, seconds in enumerate(intervals)
    ][::-1]


def test_three_alternating_directions_start_a_cool_down() -> None:
    tighten = ProposalDraft(ProposalKind.INTERVAL, "r", 10, ttl_seconds=60)
    later = NOW + timedelta(minutes=3)

    assert cooling(tighten, _made(20, 10, 20), later) == NOW + timedelta(minutes=62)
    assert cooling(replace(tighten, interval_seconds=40), _made(20, 10, 20), later) is None
    assert cooling(tighten, _made(40, 20, 20), later) is None
    assert cooling(tighten, _made(20, 10, 20, status=ProposalStatus.REFUSED), later) is None
    assert cooling(tighten, _made(20, 10, 20), NOW + timedelta(minutes=62)) is None


SUGGESTED = Suggested(current_seconds=20.0, suggested_seconds=60.0)
"""The built-in planner would move the endpoint from every 20 s to every 60 s."""


@pytest.mark.parametrize(
    ("interval", "far"),
    [(20.0, 1.0), (40.0, 1.0), (60.0, 1.0), (120.0, 2.0), (240.0, 4.0), (10.0, 2.0), (5.0, 4.0)],
)
def test_departure_is_how_far_outside_the_span_to_the_suggestion(
    interval: float, far: float
) -> None:
    assert departure(interval, SUGGESTED) == far


def _every(seconds: float) -> ProposalDraft:
    return ProposalDraft(ProposalKind.INTERVAL, "why", seconds, ttl_seconds=600)


def test_a_proposal_close_to_the_suggestion_is_trusted_more_than_one_far_from_it() -> None:
    endpoint = Endpoint(
        "e", "j", "j", EndpointSpec("e", "https://example.com", Schedule(interval_seconds=20))
    )
    close = gate(_every(45), endpoint, 0.95, START_THRESHOLD, SUGGESTED)
    past = gate(_every(120), endpoint, 0.95, START_THRESHOLD, SUGGESTED)
    away = gate(_every(5), endpoint, 0.95, START_THRESHOLD, SUGGESTED)
    far_away = gate(_every(1.25), endpoint, 0.95, START_THRESHOLD, SUGGESTED)
    unsuggested = gate(_every(1.25), endpoint, 0.95, START_THRESHOLD)

    assert close == Gated(Gate.APPLY, "confidence 0.95 is at or above the job's threshold 0.92")
    assert past == Gated(
        Gate.HOLD,
        "confidence 0.95 less 0.1 for departing x2 from the suggested 60s = 0.85 is below the "
        "job's threshold 0.92",
    )
    assert away.gate is Gate.HOLD and "less 0.2 for departing x4" in away.why
    assert far_away.gate is Gate.DROP and "less 0.4 for departing x16" in far_away.why
    assert unsuggested.gate is Gate.APPLY
    # Only interval proposals are weighed: a pause says nothing about an interval.
    pause = ProposalDraft(ProposalKind.PAUSE, "quiet", ttl_seconds=600)
    assert weighed(pause, 0.95, SUGGESTED) == (0.95, "confidence 0.95")
