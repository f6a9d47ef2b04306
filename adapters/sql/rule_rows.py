"""Response rules and rule evaluations as stored in JSON columns (`endpoints.rules`,
`analysis_sessions.rule_evaluations`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cronpilot.domain.model import JSON
from cronpilot.domain.rules import ActionKind, Rule, RuleAction, RuleEvaluation, RuleOutcome


def rules_value(rules: Sequence[Rule]) -> JSON:
    """None (SQL NULL) for no rules: the planner's claim tells endpoints with rules by it."""
    if not rules:
        return None
    return [
        {
            "when": rule.when,
            "then": {
                "kind": rule.then.kind.value,
                "interval_seconds": rule.then.interval_seconds,
                "ttl_seconds": rule.then.ttl_seconds,
                "for_seconds": rule.then.for_seconds,
            },
        }
        for rule in rules
    ]


def rules_from_value(value: JSON) -> tuple[Rule, ...]:
    if value is None:
        return ()
    return tuple(
        Rule(
            item["when"],
            RuleAction(
                ActionKind(item["then"]["kind"]),
                interval_seconds=item["then"]["interval_seconds"],
                ttl_seconds=item["then"]["ttl_seconds"],
                for_seconds=item["then"]["for_seconds"],
            ),
        )
        for item in value
    )


def evaluation_value(evaluation: RuleEvaluation) -> dict[str, Any]:
    return {
        "number": evaluation.number,
        "when": evaluation.when,
        "outcome": evaluation.outcome.value,
        "value": evaluation.value,
        "detail": evaluation.detail,
        "proposal_id": evaluation.proposal_id,
    }


def evaluation_from_value(value: dict[str, Any]) -> RuleEvaluation:
    return RuleEvaluation(
        number=value["number"],
        when=value["when"],
        outcome=RuleOutcome(value["outcome"]),
        value=value["value"],
        detail=value["detail"],
        proposal_id=value["proposal_id"],
    )
