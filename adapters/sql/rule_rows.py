"""Response rules and rule evaluations as stored in JSON columns (`endpoints.rules`,
`analysis_sessions.rule_evaluations`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy.engine import RowMapping

from cronpilot.adapters.sql.field_rows import field_values, from_fields
from cronpilot.domain.model import JSON
from cronpilot.domain.rules.rules import (
    ActionKind,
    Rule,
    RuleAction,
    RuleEvaluation,
    RuleOutcome,
    Streak,
)


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
            "for_seconds": rule.for_seconds,
            "dwell_seconds": rule.dwell_seconds,
            "urgent": rule.urgent,
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
            # Rules stored before damping existed have no damping keys: the defaults.
            for_seconds=item.get("for_seconds", 0.0),
            dwell_seconds=item.get("dwell_seconds"),
            urgent=item.get("urgent", False),
        )
        for item in value
    )


def evaluation_value(evaluation: RuleEvaluation) -> dict[str, Any]:
    return field_values(evaluation)


def evaluation_from_value(value: dict[str, Any]) -> RuleEvaluation:
    return from_fields(RuleEvaluation, value, outcome=RuleOutcome(value["outcome"]))


def streak_from_row(row: RowMapping) -> Streak | None:
    """`planner_state.rule_holding` and `rule_holding_since` as a streak (None: no rule held)."""
    number, since = row["rule_holding"], row["rule_holding_since"]
    return None if number is None or since is None else Streak(number, since)
