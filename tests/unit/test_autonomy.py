"""Graded autonomy and churn, pure (decision 0029): the threshold's rule and its bounds, the
cool-down of what alternates (the heuristic's confidence and what is in force:
`test_guardrails`)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from cronpilot.domain.planning.autonomy import (
    MAX_THRESHOLD,
    MIN_THRESHOLD,
    START_THRESHOLD,
    AutonomyStep,
    learnt,
    moves,
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
