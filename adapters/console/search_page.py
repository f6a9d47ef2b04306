"""The console's search: endpoints that answer a question, best first, with why (the parts of
each score), as `cronpilot search` and `GET /search` rank them."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query, Request, Response

from cronpilot.adapters.console.pages import SignedIn, console_router, render
from cronpilot.adapters.search.views import weights_view
from cronpilot.adapters.web.context import Context
from cronpilot.usecases.queries.catalog import list_jobs
from cronpilot.usecases.search import search_endpoints

router = console_router()


@router.get("/search")
async def search(
    request: Request,
    ctx: Context,
    who: SignedIn,
    q: Annotated[str | None, Query()] = None,
    job: Annotated[str | None, Query()] = None,
) -> Response:
    result = None
    if q is not None:
        result = await search_endpoints(
            ctx.store.reading,
            ctx.embedder,
            q,
            uow=ctx.store.unit_of_work,
            now=ctx.clock.now(),
            job=job,
            cache=ctx.search_cache,
            reach=who.reach,
        )
    return render(
        request,
        "search.html",
        who,
        ctx.clock.now(),
        q=q or "",
        job=job or "",
        jobs=[j.job.name for j in await list_jobs(ctx.store.reading, reach=who.reach)],
        result=result,
        weights=weights_view(result) if result is not None else None,
    )
