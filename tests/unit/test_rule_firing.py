"""What a response rule that holds proposes, when its action already stands, and which other
proposals contradict it (the `rule` guardrail): pure functions of the endpoint and `now`."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from cronpilot.domain.model import (
    Endpoint,
    EndpointSpec,
    IntervalHint,
    OneShotHint,
    Pause,
    Schedule,
)
from cronpilot.domain.planning.guardrails import GuardrailRule, change_for, refusal
from cronpilot.domain.planning.planning import ProposalDraft, ProposalKind
from cronpilot.domain.rules.rule_firing import (
    FiringRule,
    already_standing,
    contradiction,
    rule_draft,
)
from cronpilot.domain.rules.rules import ActionKind, Rule, RuleAction
from tests.support.settings import limits_for_tests

NOW = datetime(2030, 1, 1, tzinfo=UTC)
ENDPOINT = Endpoint(
    "id", "job", "j", EndpointSpec("e", "https://example.com", Schedule(interval_seconds=20))
)
EVERY_30S = RuleAction(ActionKind.INTERVAL, interval_seconds=30)


def _later(seconds: float) -> datetime:
    return NOW + timedelta(seconds=seconds)


def _firing(action: RuleAction) -> FiringRule:
    return FiringRule(2, "j/e", Rule("depth.body.pending > 200", action), True)


@pytest.mark.parametrize(
    ("action", "draft"),
    [
        (
            RuleAction(ActionKind.INTERVAL, interval_seconds=30, ttl_seconds=600),
            ProposalDraft(ProposalKind.INTERVAL, "", interval_seconds=30, ttl_seconds=600),
        ),
        (
            EVERY_30S,
            ProposalDraft(ProposalKind.INTERVAL, "", interval_seconds=30, ttl_seconds=3600),
        ),
        (RuleAction(ActionKind.RUN_NOW), ProposalDraft(ProposalKind.RUN_NOW, "", ttl_seconds=300)),
        (
            RuleAction(ActionKind.PAUSE, for_seconds=600),
            ProposalDraft(ProposalKind.PAUSE, "", at=_later(600)),
        ),
        (RuleAction(ActionKind.RESUME), ProposalDraft(ProposalKind.RESUME, "")),
        (RuleAction(ActionKind.BASELINE), ProposalDraft(ProposalKind.BASELINE, "")),
    ],
)
def test_each_action_proposes_with_the_rule_as_reason(
    action: RuleAction, draft: ProposalDraft
) -> None:
    made = rule_draft(_firing(action), NOW)

    assert made == replace(
        draft, reason="proposed by rule 2 of j/e: depth.body.pending > 200 = true"
    )


def test_run_now_runs_once_from_when_it_is_applied() -> None:
    """Held for review, it cannot have passed when approved (a next time can)."""
    draft = ProposalDraft(ProposalKind.RUN_NOW, "now", ttl_seconds=300)

    assert refusal(draft, ENDPOINT, 0, _later(3600), limits_for_tests()) is None
    change = change_for(draft, ENDPOINT, _later(3600), by="rules")
    assert change.oneshot_hint == OneShotHint(_later(3600), _later(3900), "now")
    dependant = replace(ENDPOINT, spec=replace(ENDPOINT.spec, schedule=Schedule()))
    refused = refusal(draft, dependant, 0, NOW, limits_for_tests())
    assert refused is not None
    assert refused.rule is GuardrailRule.AFTER_UPSTREAMS


def test_baseline_drops_the_hints_and_keeps_the_pause() -> None:
    hinted = replace(
        ENDPOINT,
        interval_hint=IntervalHint(5, _later(60), "x"),
        oneshot_hint=OneShotHint(_later(3), _later(60), "y"),
    )
    draft = ProposalDraft(ProposalKind.BASELINE, "back")

    assert refusal(draft, hinted, 0, NOW, limits_for_tests()) is None
    change = change_for(draft, hinted, NOW, by="rules")
    assert (change.interval_hint, change.oneshot_hint, change.pause) == (None, None, None)


@pytest.mark.parametrize(
    ("action", "endpoint", "standing"),
    [
        (EVERY_30S, ENDPOINT, None),
        (
            EVERY_30S,
            replace(ENDPOINT, interval_hint=IntervalHint(30, _later(1), "r")),
            "already in force: every 30s",
        ),
        (EVERY_30S, replace(ENDPOINT, interval_hint=IntervalHint(30, NOW, "r")), None),
        (EVERY_30S, replace(ENDPOINT, interval_hint=IntervalHint(10, _later(60), "r")), None),
        (RuleAction(ActionKind.BASELINE), ENDPOINT, "already in force: no hints"),
    ],
)
def test_an_action_in_force_is_not_proposed_again(
    action: RuleAction, endpoint: Endpoint, standing: str | None
) -> None:
    assert already_standing(action, endpoint, [], NOW, held_before=False) == standing


@pytest.mark.parametrize(
    ("by", "standing"),
    [
        ("cli:ann@h", "paused by cli:ann@h: an admin's pause is lifted by an admin"),
        ("token:ops", "paused by token:ops: an admin's pause is lifted by an admin"),
        ("rules", None),
        ("planner:llm:gpt-4o", None),
        ("scheduler", None),
        (None, None),
    ],
)
def test_a_rule_lifts_what_cronpilot_paused_and_never_a_persons_pause(
    by: str | None, standing: str | None
) -> None:
    paused = replace(ENDPOINT, pause=Pause("quiet", by=by))

    resume = RuleAction(ActionKind.RESUME)

    assert already_standing(resume, paused, [], NOW, held_before=False) == standing


@pytest.mark.parametrize(
    ("action", "draft", "against"),
    [
        (EVERY_30S, ProposalDraft(ProposalKind.INTERVAL, "r", 30, ttl_seconds=60), None),
        (
            EVERY_30S,
            ProposalDraft(ProposalKind.INTERVAL, "r", 60, ttl_seconds=60),
            "it proposes interval 60s where the rule says interval 30s",
        ),
        (
            EVERY_30S,
            ProposalDraft(ProposalKind.PAUSE, "r", at=_later(60)),
            "it proposes pause where the rule says interval 30s",
        ),
        (
            RuleAction(ActionKind.RUN_NOW),
            ProposalDraft(ProposalKind.NEXT_TIME, "r", at=_later(60), ttl_seconds=120),
            None,
        ),
        (
            RuleAction(ActionKind.RUN_NOW),
            ProposalDraft(ProposalKind.INTERVAL, "r", 30, ttl_seconds=60),
            "it proposes interval where the rule says run_now",
        ),
        (
            RuleAction(ActionKind.PAUSE, for_seconds=60),
            ProposalDraft(ProposalKind.PAUSE, "r", at=_later(3600)),
            None,
        ),
        (
            RuleAction(ActionKind.PAUSE, for_seconds=60),
            ProposalDraft(ProposalKind.RESUME, "r"),
            "it proposes resume where the rule says pause for 60s",
        ),
    ],
)
def test_another_planners_proposal_may_not_contradict_a_rule_that_holds(
    action: RuleAction, draft: ProposalDraft, against: str | None
) -> None:
    assert contradiction(action, draft) == against
    refused = refusal(draft, ENDPOINT, 0, NOW, limits_for_tests(), firing=_firing(action))
    if against is None:
        assert refused is None or refused.rule is not GuardrailRule.RULE
    else:
        assert refused is not None
        assert refused.rule is GuardrailRule.RULE
        assert refused.text == (
            f"rule 2 of j/e: depth.body.pending > 200 = true holds, and {against}"
        )
