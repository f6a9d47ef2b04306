"""Translation between the planner's tables and its entities (proposals, sessions)."""

from __future__ import annotations

from dataclasses import asdict, fields
from typing import Any

from sqlalchemy.engine import RowMapping

from cronpilot.adapters.sql.field_rows import field_values, from_fields
from cronpilot.adapters.sql.rule_rows import evaluation_from_value, evaluation_value
from cronpilot.domain.planning.autonomy import AutonomyStep
from cronpilot.domain.planning.planning import (
    AnalysisSession,
    Proposal,
    ProposalKind,
    ProposalStatus,
    SessionStatus,
    ToolCallRecord,
)


def proposal_values(proposal: Proposal) -> dict[str, Any]:
    return field_values(proposal)


def proposal_from_row(row: RowMapping) -> Proposal:
    return from_fields(
        Proposal, row, kind=ProposalKind(row["kind"]), status=ProposalStatus(row["status"])
    )


def step_values(step: AutonomyStep) -> dict[str, Any]:
    # The columns are named as the fields, and every field is a plain value.
    return asdict(step)


def step_from_row(row: RowMapping) -> AutonomyStep:
    return AutonomyStep(**{item.name: row[item.name] for item in fields(AutonomyStep)})


def _call_values(call: ToolCallRecord) -> dict[str, Any]:
    return {
        "seq": call.seq,
        "name": call.name,
        "arguments": call.arguments,
        "duration_ms": call.duration_ms,
        "result_chars": call.result_chars,
        "error": call.error,
        "outcome": call.outcome,
    }


def session_values(session: AnalysisSession) -> dict[str, Any]:
    return field_values(
        session,
        tool_calls=[_call_values(call) for call in session.tool_calls],
        rule_evaluations=[evaluation_value(e) for e in session.rule_evaluations],
    )


def session_from_row(row: RowMapping) -> AnalysisSession:
    return from_fields(
        AnalysisSession,
        row,
        status=SessionStatus(row["status"]),
        tool_calls=[ToolCallRecord(**call) for call in row["tool_calls"]],
        rule_evaluations=[evaluation_from_value(e) for e in row["rule_evaluations"]],
    )
