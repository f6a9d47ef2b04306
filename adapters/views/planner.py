"""The JSON shapes of proposals and analysis sessions in `--json` output (add keys, never
rename), and the words people read for them."""

from __future__ import annotations

from typing import Any

from cronpilot.adapters.views.formats import iso, span
from cronpilot.domain.planning.planning import (
    AnalysisSession,
    Proposal,
    ProposalKind,
    ToolCallRecord,
)
from cronpilot.domain.rules.rules import RuleEvaluation, RuleOutcome
from cronpilot.usecases.queries.planner import JobAutonomy


def _duration(seconds: float) -> str:
    # Below a minute the planner's halvings (2.5 s) matter; `span` would round them away.
    return f"{seconds:g}s" if seconds < 60 else span(seconds)


def change_text(proposal: Proposal) -> str:
    """`every 30s for 10m`, `once at …`, `pause until …`, `resume`, `back to the baseline`,
    `run once, now`."""
    if proposal.kind is ProposalKind.INTERVAL and proposal.interval_seconds is not None:
        interval, ttl = proposal.interval_seconds, proposal.ttl_seconds or 0
        return f"every {_duration(interval)} for {_duration(ttl)}"
    if proposal.kind is ProposalKind.NEXT_TIME:
        return f"once at {iso(proposal.at)}"
    if proposal.kind is ProposalKind.PAUSE:
        return f"pause until {iso(proposal.at)}"
    if proposal.kind is ProposalKind.BASELINE:
        return "back to the baseline"
    if proposal.kind is ProposalKind.RUN_NOW:
        return "run once, now"
    return "resume"


def proposal_view(proposal: Proposal, endpoint_ref: str) -> dict[str, Any]:
    return {
        "id": proposal.id,
        "endpoint": endpoint_ref,
        "endpoint_id": proposal.endpoint_id,
        "kind": proposal.kind.value,
        "change": change_text(proposal),
        "interval_seconds": proposal.interval_seconds,
        "at": iso(proposal.at),
        "ttl_seconds": proposal.ttl_seconds,
        "reason": proposal.reason,
        "proposed_by": proposal.proposed_by,
        "session_id": proposal.session_id,
        "created_at": iso(proposal.created_at),
        "status": proposal.status.value,
        "expires_at": iso(proposal.expires_at),
        "decided_by": proposal.decided_by,
        "decided_at": iso(proposal.decided_at),
        "outcome": proposal.outcome,
        "confidence": proposal.confidence,
        "superseded_by": proposal.superseded_by,
    }


def autonomy_view(autonomy: JobAutonomy) -> dict[str, Any]:
    return {
        "job": autonomy.job.name,
        "planner_mode": autonomy.job.planner_mode.value,
        "threshold": autonomy.threshold,
        "history": [
            {
                "at": iso(step.at),
                "threshold": step.threshold,
                "approvals": step.approvals,
                "rejections": step.rejections,
                "note": step.note,
                "proposal_id": step.proposal_id,
            }
            for step in autonomy.history
        ],
    }


NOT_MADE = "not made: "
"""How an action tool's outcome starts when the change was held back (`planner.tools`)."""


def held_back(session: AnalysisSession) -> list[tuple[str, str]]:
    """The session's changes that were not proposed, as (what, why): a planner's held back
    by an admin's standing rejection or already in force or pending, a rule's held back by a
    rejection."""
    calls = [
        (call.name, call.outcome.removeprefix(NOT_MADE))
        for call in session.tool_calls
        if call.outcome is not None and call.outcome.startswith(NOT_MADE)
    ]
    rules = [
        (f"rule {evaluation.number}", evaluation.detail or evaluation.outcome.value)
        for evaluation in session.rule_evaluations
        if evaluation.outcome is RuleOutcome.REJECTED
    ]
    return calls + rules


def _call_view(call: ToolCallRecord) -> dict[str, Any]:
    return {
        "seq": call.seq,
        "name": call.name,
        "arguments": call.arguments,
        "duration_ms": round(call.duration_ms, 2),
        "result_chars": call.result_chars,
        "error": call.error,
        "outcome": call.outcome,
    }


def evaluation_view(evaluation: RuleEvaluation) -> dict[str, Any]:
    return {
        "rule": evaluation.number,
        "when": evaluation.when,
        "value": evaluation.value,
        "outcome": evaluation.outcome.value,
        "detail": evaluation.detail,
        "proposal_id": evaluation.proposal_id,
    }


def session_view(session: AnalysisSession, endpoint_ref: str) -> dict[str, Any]:
    return {
        "id": session.id,
        "endpoint": endpoint_ref,
        "endpoint_id": session.endpoint_id,
        "planner": session.planner,
        "status": session.status.value,
        "started_at": iso(session.started_at),
        "finished_at": iso(session.finished_at),
        "reasoning": session.reasoning,
        "confidence": session.confidence,
        "next_analysis_at": iso(session.next_analysis_at),
        "prompt_tokens": session.prompt_tokens,
        "completion_tokens": session.completion_tokens,
        "tool_errors": session.tool_errors,
        "error": session.error,
        "tool_calls": [_call_view(call) for call in session.tool_calls],
        "rule_evaluations": [evaluation_view(e) for e in session.rule_evaluations],
    }
