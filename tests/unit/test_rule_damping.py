"""Damped rules (decision 0032), pure: since when a rule has held, which proposal starts a dwell,
whether a rule that holds waits (its `for:`, the dwell, `urgent`), and that rules count in the
hourly limit unless urgent."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from cronpilot.domain.model import Endpoint, EndpointSpec, Schedule
from cronpilot.domain.planning.guardrails import GuardrailRule, refusal
from cronpilot.domain.planning.planning import Proposal, ProposalDraft, ProposalKind, ProposalStatus
from cronpilot.domain.rules.rule_damping import held_back, last_rule_move, streak_after
from cronpilot.domain.rules.rules import ActionKind, Rule, RuleAction, RuleOutcome, Streak
from tests.support.settings import limits_for_tests

NOW = datetime(2030, 1, 1, tzinfo=UTC)
DWELL = 120.0
FAST = Rule("depth.body.pending > 200", RuleAction(ActionKind.INTERVAL, interval_seconds=3))
SLOW = Rule("depth.body.pending < 50", RuleAction(ActionKind.INTERVAL, interval_seconds=60))
ENDPOINT = Endpoint(
    "id", "job", "j", EndpointSpec("e", "https://example.com", Schedule(interval_seconds=20))
)


def _ago(seconds: float) -> datetime:
    return NOW - timedelta(seconds=seconds)


def _proposal(
    ago: float,
    interval: float = 3,
    *,
    by: str = "rules",
    status: ProposalStatus = ProposalStatus.APPLIED,
    decided_ago: float | None = None,
) -> Proposal:
    decided = (
        None
        if status is ProposalStatus.PENDING
        else _ago(ago if decided_ago is None else decided_ago)
    )
    return Proposal(
        id=f"p{ago:g}",
        endpoint_id="id",
        job_id="job",
        kind=ProposalKind.INTERVAL,
        reason="r",
        proposed_by=by,
        created_at=_ago(ago),
        status=status,
        interval_seconds=interval,
        ttl_seconds=600,
        decided_at=decided,
    )


def test_a_streak_goes_on_while_the_same_rule_holds_first() -> None:
    begun = streak_after(None, 2, _ago(30))

    assert begun == Streak(2, _ago(30))
    assert streak_after(begun, 2, NOW) == begun
    assert streak_after(begun, 1, NOW) == Streak(1, NOW)


def test_the_last_move_is_the_latest_change_or_waiting_or_refused_rule_proposal() -> None:
    """Every applied change starts the dwell, the planner's too (decision 0048)."""
    recent = [
        _proposal(5, by="heuristic"),
        _proposal(10, status=ProposalStatus.REJECTED),
        _proposal(15, status=ProposalStatus.EXPIRED),
        _proposal(40, by="rules:urgent"),
        # Proposed long ago, approved after the others were made: applied latest.
        _proposal(300, status=ProposalStatus.APPLIED, decided_ago=20),
        _proposal(60, status=ProposalStatus.REFUSED),
    ]

    assert last_rule_move(recent) == recent[0]
    assert last_rule_move(recent[1:]) == recent[4]
    assert last_rule_move(recent[1:4]) == recent[3]
    assert last_rule_move(recent[1:3]) is None
    pending = _proposal(1, status=ProposalStatus.PENDING)
    assert last_rule_move([pending, *recent]) == pending


def test_for_holds_a_rule_back_until_it_has_held_that_long() -> None:
    patient = Rule(FAST.when, FAST.then, for_seconds=30)

    waiting = held_back(patient, Streak(1, _ago(29)), None, NOW, DWELL)

    assert waiting is not None
    assert (waiting.outcome, waiting.until) == (RuleOutcome.PENDING, NOW + timedelta(seconds=1))
    assert waiting.text == (
        f"holds since {_ago(29).isoformat()}; fires once it has held for 30s, at "
        f"{(NOW + timedelta(seconds=1)).isoformat()}"
    )
    assert held_back(patient, Streak(1, _ago(30)), None, NOW, DWELL) is None
    # Urgent or not: `for:` is about the data, not about the last change.
    urgent = Rule(FAST.when, FAST.then, for_seconds=30, urgent=True)
    assert held_back(urgent, Streak(1, NOW), None, NOW, DWELL) is not None


@pytest.mark.parametrize(
    ("rule", "last", "until"),
    [
        (SLOW, _proposal(119), 1),
        (SLOW, _proposal(120), None),
        (SLOW, _proposal(100, status=ProposalStatus.REFUSED), 20),
        (SLOW, _proposal(100, status=ProposalStatus.PENDING), 20),
        # Its own dwell wins over the setting's.
        (Rule(SLOW.when, SLOW.then, dwell_seconds=300), _proposal(200), 100),
        (Rule(SLOW.when, SLOW.then, dwell_seconds=0), _proposal(0), None),
        (Rule(SLOW.when, SLOW.then, urgent=True), _proposal(0), None),
        # Renewing the change a rule made (its hint lapsed) reverses nothing.
        (FAST, _proposal(10, interval=3), None),
        # A refused one is tried again once its dwell is over.
        (FAST, _proposal(10, interval=3, status=ProposalStatus.REFUSED), 110),
    ],
)
def test_a_rule_made_change_dwells_before_a_rule_replaces_it(
    rule: Rule, last: Proposal, until: float | None
) -> None:
    waiting = held_back(rule, Streak(2, _ago(600)), last, NOW, DWELL)

    if until is None:
        assert waiting is None
        return
    assert waiting is not None
    assert (waiting.outcome, waiting.until) == (
        RuleOutcome.DWELLING,
        NOW + timedelta(seconds=until),
    )
    assert f"(proposal {last.id}, {last.status.value}) dwells" in waiting.text


def test_rules_count_in_the_hourly_limit_unless_urgent() -> None:
    draft = ProposalDraft(ProposalKind.INTERVAL, "proposed by rule 1", 30, ttl_seconds=600)
    limits = limits_for_tests(max_changes_per_hour=2)

    refused = refusal(draft, ENDPOINT, 2, NOW, limits, ruled=True)

    assert refused is not None
    assert refused.rule is GuardrailRule.RATE
    assert refusal(draft, ENDPOINT, 2, NOW, limits, ruled=True, urgent=True) is None
