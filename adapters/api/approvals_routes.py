"""Approval gates: the DAG dependants waiting for an admin, and the admin's decision."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import Field

from cronpilot.adapters.api.access import Admin, Reader
from cronpilot.adapters.views.approvals import approval_view
from cronpilot.adapters.web.context import ApiContext, Context
from cronpilot.adapters.web.paging import CursorToken, Limit, after, endpoint_page_view
from cronpilot.adapters.web.strict import StrictBody
from cronpilot.domain.planning.approvals import Approval, ApprovalState
from cronpilot.usecases.queries.approvals import list_approvals
from cronpilot.usecases.queries.catalog import ref_of
from cronpilot.usecases.queries.reach import check_target

router = APIRouter(tags=["approvals"])


@router.get("/approvals")
async def get_approvals(
    *,
    ctx: Context,
    who: Reader,
    state: ApprovalState | None = None,
    job: str | None = None,
    endpoint: str | None = None,
    limit: Limit = 50,
    cursor: CursorToken = None,
) -> dict[str, Any]:
    page = await list_approvals(
        ctx.store.reading,
        state=state,
        job=job,
        endpoint=endpoint,
        limit=limit,
        after=after(cursor),
        reach=who.reach,
    )
    return await endpoint_page_view(ctx.store.reading, page, approval_view)


class DecisionRequest(StrictBody):
    reason: str | None = Field(default=None, min_length=1, max_length=500, pattern=r"\S")


@router.post("/approvals/{approval_id}/approve")
async def approve(
    approval_id: str, ctx: Context, who: Admin, request: DecisionRequest | None = None
) -> dict[str, Any]:
    """Let the waiting dependant run; an approval decided already (or expired) is a 409."""
    await check_target(ctx.store.reading, who.reach, approval=approval_id)
    decided = await ctx.approvals.approve(approval_id, who.actor, _reason(request), ctx.clock.now())
    return await _view(ctx, decided)


@router.post("/approvals/{approval_id}/reject")
async def reject(
    approval_id: str, ctx: Context, who: Admin, request: DecisionRequest | None = None
) -> dict[str, Any]:
    """Skip the waiting dependant and what follows it; decided already is a 409."""
    await check_target(ctx.store.reading, who.reach, approval=approval_id)
    decided = await ctx.approvals.reject(approval_id, who.actor, _reason(request), ctx.clock.now())
    return await _view(ctx, decided)


def _reason(request: DecisionRequest | None) -> str | None:
    if request is None or request.reason is None:
        return None
    return " ".join(request.reason.split())


async def _view(ctx: ApiContext, decided: Approval) -> dict[str, Any]:
    return approval_view(decided, await ref_of(ctx.store.reading, decided))
