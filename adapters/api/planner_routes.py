"""What the planner did and wants: proposals (and their review) and analysis sessions."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from fastapi import APIRouter
from pydantic import Field

from cronpilot.adapters.api.access import Admin, Reader
from cronpilot.adapters.api.windows import Within
from cronpilot.adapters.views.planner import autonomy_view, proposal_view, session_view
from cronpilot.adapters.web.context import Context
from cronpilot.adapters.web.paging import CursorToken, Limit, after, endpoint_page_view
from cronpilot.adapters.web.problems import problem
from cronpilot.adapters.web.strict import StrictBody
from cronpilot.domain.planning.planning import ProposalStatus
from cronpilot.usecases.queries.catalog import ref_of
from cronpilot.usecases.queries.planner import (
    job_autonomy,
    list_proposals,
    list_sessions,
    show_proposal,
    show_session,
)
from cronpilot.usecases.queries.reach import check_target

router = APIRouter(tags=["planner"])


@router.get("/proposals")
async def get_proposals(
    *,
    ctx: Context,
    who: Reader,
    status: ProposalStatus | None = None,
    job: str | None = None,
    endpoint: str | None = None,
    limit: Limit = 50,
    cursor: CursorToken = None,
    within: Within,
) -> dict[str, Any]:
    page = await list_proposals(
        ctx.store.reading,
        status=status,
        job=job,
        endpoint=endpoint,
        limit=limit,
        after=after(cursor),
        within=within,
        reach=who.reach,
    )
    return await endpoint_page_view(ctx.store.reading, page, proposal_view)


@router.get("/planner/autonomy")
async def get_autonomy(ctx: Context, who: Reader, job: str | None = None) -> list[dict[str, Any]]:
    """Each job's graded-autonomy threshold and the admins' decisions that taught it, as
    `cronpilot planner autonomy --json`."""
    found = await job_autonomy(ctx.store.reading, job, reach=who.reach)
    return [autonomy_view(each) for each in found]


@router.get("/proposals/{proposal_id}")
async def get_proposal(proposal_id: str, ctx: Context, who: Reader) -> dict[str, Any]:
    found = await show_proposal(ctx.store.reading, proposal_id, reach=who.reach)
    return proposal_view(found, await ref_of(ctx.store.reading, found))


@router.post("/proposals/{proposal_id}/approve", response_model=None)
async def approve(proposal_id: str, ctx: Context, who: Admin) -> Any:
    """Apply a pending proposal now; the guardrails are checked again first, and a refusal
    (recorded on the proposal) is a 409."""
    await check_target(ctx.store.reading, who.reach, proposal=proposal_id)
    decided = await ctx.desk.approve(proposal_id, who.actor, ctx.clock.now())
    view = proposal_view(decided, await ref_of(ctx.store.reading, decided))
    if decided.status is not ProposalStatus.APPLIED:
        return problem(
            HTTPStatus.CONFLICT, f"proposal {decided.id} {decided.outcome}", proposal=view
        )
    return view


class RejectRequest(StrictBody):
    reason: str = Field(min_length=1, max_length=500, pattern=r"\S")


@router.post("/proposals/{proposal_id}/reject")
async def reject(
    proposal_id: str, request: RejectRequest, ctx: Context, who: Admin
) -> dict[str, Any]:
    await check_target(ctx.store.reading, who.reach, proposal=proposal_id)
    why = " ".join(request.reason.split())
    decided = await ctx.desk.reject(proposal_id, who.actor, why, ctx.clock.now())
    return proposal_view(decided, await ref_of(ctx.store.reading, decided))


@router.get("/sessions")
async def get_sessions(
    *,
    ctx: Context,
    who: Reader,
    endpoint: str | None = None,
    limit: Limit = 20,
    cursor: CursorToken = None,
    within: Within,
) -> dict[str, Any]:
    page = await list_sessions(
        ctx.store.reading, endpoint, limit, after(cursor), within, reach=who.reach
    )
    return await endpoint_page_view(ctx.store.reading, page, session_view)


@router.get("/sessions/{session_id}")
async def get_session(session_id: str, ctx: Context, who: Reader) -> dict[str, Any]:
    found = await show_session(ctx.store.reading, session_id, reach=who.reach)
    return session_view(found, await ref_of(ctx.store.reading, found))
