"""The console's limits: each key's bounds, its calls in flight and the slots it holds back,
as `cronpilot limits list` and `GET /limits` show them."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query, Request, Response

from cronpilot.adapters.console.pages import SignedIn, console_router, render
from cronpilot.adapters.web.context import Context
from cronpilot.usecases.queries.catalog import list_limits

router = console_router()


@router.get("/limits")
async def limits(
    request: Request, ctx: Context, who: SignedIn, job: Annotated[str | None, Query()] = None
) -> Response:
    """By key; with `job`, only the keys its endpoints name (a job-limited token names one)."""
    return render(
        request,
        "limits.html",
        who,
        ctx.clock.now(),
        limits=await list_limits(ctx.store.reading, job, reach=who.reach),
        job=job or "",
    )
