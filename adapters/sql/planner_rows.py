"""Translation between the planner's tables and its entities (proposals, sessions)."""

from __future__ import annotations

from dataclasses import asdict, fields
from typing import Any

from sqlalchemy.engine import RowMapping

from cronpilot.adapters.sql.rule_rows import evaluation_from_value, evaluation_value
from cronpilot.domain.autonomy import AutonomyStep
from cronpilot.domain.planning import (
    AnalysisSession,
    Proposal,
    ProposalKind,
    ProposalStatus,
    SessionStatus,
    ToolCallRecord,
)


def proposal_values(proposal: Proposal) -> dict[str, Any]:
    return {
        "id": proposal.id,
        "endpoint_id": proposal.endpoint_id,
        "job_id": proposal.job_id,
        "session_id": proposal.session_id,
        "kind": proposal.kind.value,
        "reason": proposal.reason,
        "proposed_by": proposal.proposed_by,
        "created_at": proposal.created_at,
        "status": proposal.status.value,
        "interval_seconds": proposal.interval_seconds,
        "at": proposal.at,
        "ttl_seconds": proposal.ttl_seconds,
        "expires_at": proposal.expires_at,
        "decided_by": proposal.decided_by,
        "decided_at": proposal.decided_at,
        "outcome": proposal.outcome,
        "confidence": proposal.confidence,
        "superseded_by": proposal.superseded_by,
    }


def proposal_from_row(row: RowMapping) -> Proposal:
    return Proposal(
        id=row["id"],
        endpoint_id=row["endpoint_id"],
        job_id=row["job_id"],
        session_id=row["session_id"],
        kind=ProposalKind(row["kind"]),
        reason=row["reason"],
        proposed_by=row["proposed_by"],
        created_at=row["created_at"],
        status=ProposalStatus(row["status"]),
        interval_seconds=row["interval_seconds"],
        at=row["at"],
        ttl_seconds=row["ttl_seconds"],
        expires_at=row["expires_at"],
        decided_by=row["decided_by"],
        decided_at=row["decided_at"],
        outcome=row["outcome"],
        confidence=row["confidence"],
        superseded_by=row["superseded_by"],
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
    return {
        "id": session.id,
        "endpoint_id": session.endpoint_id,
        "job_id": session.job_id,
        "planner": session.planner,
        "started_at": session.started_at,
        "finished_at": session.finished_at,
        "status": session.status.value,
        "reasoning": session.reasoning,
        "confidence": session.confidence,
        "next_analysis_at": session.next_analysis_at,
        "prompt_tokens": session.prompt_tokens,
        "completion_tokens": session.completion_tokens,
        "tool_errors": session.tool_errors,
        "error": session.error,
        "tool_calls": [_call_values(call) for call in session.tool_calls],
        "rule_evaluations": [evaluation_value(e) for e in session.rule_evaluations],
    }


def session_from_row(row: RowMapping) -> AnalysisSession:
    return AnalysisSession(
        id=row["id"],
        endpoint_id=row["endpoint_id"],
        job_id=row["job_id"],
        planner=row["planner"],
        started_at=row["started_at"],
        finished_at=row["finished_at"],
        status=SessionStatus(row["status"]),
        reasoning=row["reasoning"],
        confidence=row["confidence"],
        next_analysis_at=row["next_analysis_at"],
        prompt_tokens=row["prompt_tokens"],
        completion_tokens=row["completion_tokens"],
        tool_errors=row["tool_errors"],
        error=row["error"],
        tool_calls=[ToolCallRecord(**call) for call in row["tool_calls"]],
        rule_evaluations=[evaluation_from_value(e) for e in row["rule_evaluations"]],
    )
