"""What the planner wants and did: the proposals review queue (approve, or reject with a
reason), the approvals DAG gates wait for, and the analysis sessions, each a timeline of its
tool calls."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query, Request, Response

from cronpilot.adapters.console.pages import (
    PAGE,
    PREFIX,
    Administering,
    SignedIn,
    back,
    choice,
    console_router,
    older,
    render,
)
from cronpilot.adapters.views.planner import change_text, held_back
from cronpilot.adapters.web.context import Context
from cronpilot.adapters.web.paging import after
from cronpilot.domain.errors import InvalidConfig
from cronpilot.domain.model import PlannerMode
from cronpilot.domain.planning.approvals import ApprovalState
from cronpilot.domain.planning.planning import ProposalStatus
from cronpilot.usecases.queries.approvals import list_approvals
from cronpilot.usecases.queries.catalog import endpoint_refs
from cronpilot.usecases.queries.planner import (
    job_autonomy,
    list_proposals,
    list_sessions,
    show_session,
)
from cronpilot.usecases.queries.reach import check_target

router = console_router()

EVERY_STATUS = "all"
"""The proposals filter's choice of every status (an empty one is refused, as on every page)."""


@router.get("/proposals")
async def proposals(
    *,
    request: Request,
    ctx: Context,
    who: SignedIn,
    status: Annotated[str | None, Query()] = ProposalStatus.PENDING.value,
    endpoint: Annotated[str | None, Query()] = None,
) -> Response:
    """The queue: pending proposals by default (`?status=all` for every one), then the
    approvals that DAG gates wait for, and the planner mode of each job."""
    reading, reach = ctx.store.reading, who.reach
    wanted = None if status == EVERY_STATUS else choice(ProposalStatus, "status", status)
    page = await list_proposals(reading, status=wanted, endpoint=endpoint, limit=PAGE, reach=reach)
    gates = await list_approvals(reading, limit=PAGE, reach=reach)
    return render(
        request,
        "proposals.html",
        who,
        ctx.clock.now(),
        proposals=page.items,
        changes={p.id: change_text(p) for p in page.items},
        gates=gates.items,
        refs=await endpoint_refs(reading, reach=reach),
        status=wanted,
        endpoint=endpoint or "",
        statuses=[s.value for s in ProposalStatus],
        every=EVERY_STATUS,
        autonomies=await job_autonomy(reading, reach=reach),
        graded=PlannerMode.GRADED,
        pending_gate=ApprovalState.PENDING,
    )


QUEUE = f"{PREFIX}/proposals"


@router.post("/proposals/{proposal_id}/approve")
async def approve(proposal_id: str, ctx: Context, act: Administering) -> Response:
    await check_target(ctx.store.reading, act.reach, proposal=proposal_id)
    decided = await ctx.desk.approve(proposal_id, act.actor, ctx.clock.now())
    return back(QUEUE, "approved" if decided.status is ProposalStatus.APPLIED else "refused")


def _reason(act: Administering) -> str:
    reason = act.text("reason")
    if not reason:
        raise InvalidConfig("reason", "say why, for the audit log and the planner's next look")
    return reason


@router.post("/proposals/{proposal_id}/reject")
async def reject(proposal_id: str, ctx: Context, act: Administering) -> Response:
    await check_target(ctx.store.reading, act.reach, proposal=proposal_id)
    await ctx.desk.reject(proposal_id, act.actor, _reason(act), ctx.clock.now())
    return back(QUEUE, "rejected")


@router.post("/approvals/{approval_id}/approve")
async def approve_gate(approval_id: str, ctx: Context, act: Administering) -> Response:
    await check_target(ctx.store.reading, act.reach, approval=approval_id)
    reason = act.text("reason") or None
    await ctx.approvals.approve(approval_id, act.actor, reason, ctx.clock.now())
    return back(QUEUE, "gate-approved")


@router.post("/approvals/{approval_id}/reject")
async def reject_gate(approval_id: str, ctx: Context, act: Administering) -> Response:
    await check_target(ctx.store.reading, act.reach, approval=approval_id)
    await ctx.approvals.reject(approval_id, act.actor, _reason(act), ctx.clock.now())
    return back(QUEUE, "gate-rejected")


@router.get("/sessions")
async def sessions(
    *,
    request: Request,
    ctx: Context,
    who: SignedIn,
    endpoint: Annotated[str | None, Query()] = None,
    cursor: Annotated[str | None, Query()] = None,
) -> Response:
    reading, reach = ctx.store.reading, who.reach
    page = await list_sessions(reading, endpoint, PAGE, after(cursor), reach=reach)
    return render(
        request,
        "sessions.html",
        who,
        ctx.clock.now(),
        sessions=page.items,
        held={s.id: [why for _, why in held_back(s)] for s in page.items},
        refs=await endpoint_refs(reading, reach=reach),
        endpoint=endpoint or "",
        older=older(page, endpoint=endpoint),
    )


@router.get("/sessions/{session_id}")
async def session(request: Request, session_id: str, ctx: Context, who: SignedIn) -> Response:
    found = await show_session(ctx.store.reading, session_id, reach=who.reach)
    refs = await endpoint_refs(ctx.store.reading, reach=who.reach)
    longest = max((c.duration_ms for c in found.tool_calls), default=0) or 1
    return render(
        request,
        "session.html",
        who,
        ctx.clock.now(),
        session=found,
        ref=refs.get(found.endpoint_id, "?"),
        longest=longest,
    )
