"""The tools of a server started with an `admin` token: deciding the planner's proposals and
the approval gates, through the desks the CLI and the API use, recorded for the token."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from cronpilot.adapters.mcp.context import McpContext
from cronpilot.adapters.mcp.read_tools import AnId, shown
from cronpilot.adapters.mcp.toolbox import Toolbox
from cronpilot.adapters.views.approvals import approval_view
from cronpilot.adapters.views.planner import proposal_view
from cronpilot.domain.access.access import Principal
from cronpilot.domain.errors import CronpilotError
from cronpilot.domain.planning.planning import Proposal, ProposalStatus
from cronpilot.usecases.queries.reach import check_target


class NotApplied(CronpilotError):
    """An approved proposal the guardrails refused (the refusal is recorded on it)."""

    def __init__(self, proposal: Proposal) -> None:
        super().__init__(f"proposal {proposal.id} {proposal.outcome}")


Reason = Annotated[str, Field(min_length=1, max_length=500, pattern=r"\S")]


def _one_line(reason: str | None) -> str | None:
    return None if reason is None else " ".join(reason.split())


def add_decision_tools(box: Toolbox, ctx: McpContext, who: Principal) -> None:
    desk, gates, reading = ctx.desk, ctx.approvals, ctx.store.reading
    actor, reach = who.actor, who.reach

    @box.tool(read_only=False)
    async def approve_proposal(proposal_id: AnId) -> dict[str, Any]:
        """Apply a pending proposal now; the guardrails are checked again first, and a
        refusal (recorded on the proposal) is an error."""
        await check_target(reading, reach, proposal=proposal_id)
        decided = await desk.approve(proposal_id, actor, ctx.clock.now())
        if decided.status is not ProposalStatus.APPLIED:
            raise NotApplied(decided)
        return await shown(reading, decided, proposal_view)

    @box.tool(read_only=False)
    async def reject_proposal(proposal_id: AnId, reason: Reason) -> dict[str, Any]:
        """Turn a pending proposal down, with a reason for the audit trail."""
        await check_target(reading, reach, proposal=proposal_id)
        decided = await desk.reject(proposal_id, actor, " ".join(reason.split()), ctx.clock.now())
        return await shown(reading, decided, proposal_view)

    @box.tool(read_only=False)
    async def approve_gate(approval_id: AnId, reason: Reason | None = None) -> dict[str, Any]:
        """Let a DAG dependant waiting at an approval gate run; a scheduler worker starts it
        within CRONPILOT_DAG_SWEEP_SECONDS."""
        await check_target(reading, reach, approval=approval_id)
        decided = await gates.approve(approval_id, actor, _one_line(reason), ctx.clock.now())
        return await shown(reading, decided, approval_view)

    @box.tool(read_only=False)
    async def reject_gate(approval_id: AnId, reason: Reason | None = None) -> dict[str, Any]:
        """Skip a DAG dependant waiting at an approval gate, and what follows it."""
        await check_target(reading, reach, approval=approval_id)
        decided = await gates.reject(approval_id, actor, _one_line(reason), ctx.clock.now())
        return await shown(reading, decided, approval_view)
