"""Search: endpoints ranked by how well they answer a question or an intent (decision 0033)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from cronpilot.adapters.api.access import Reader
from cronpilot.adapters.search.views import result_view
from cronpilot.adapters.web.context import Context
from cronpilot.domain.search.search import DEFAULT_LIMIT, MAX_LIMIT
from cronpilot.usecases.search import search_endpoints

router = APIRouter(tags=["search"])


@router.get("/search")
async def search(
    ctx: Context,
    who: Reader,
    q: Annotated[str, Query(description="What the endpoint should do or tell, in words.")],
    job: Annotated[str | None, Query(description="Only this job's endpoints.")] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = DEFAULT_LIMIT,
) -> dict[str, Any]:
    """Endpoints best first, each score with its semantic, lexical and graph parts; `related`
    the query's words the index lacks and the indexed words the lexical leg matched for them
    by meaning; `notes` says when a leg is missing (no embedding model reachable). 400 for an
    empty query, one over 500 characters or in another script; 404 for an unknown job."""
    result = await search_endpoints(
        ctx.store.reading,
        ctx.embedder,
        q,
        uow=ctx.store.unit_of_work,
        now=ctx.clock.now(),
        job=job,
        limit=limit,
        cache=ctx.search_cache,
        reach=who.reach,
    )
    return result_view(result)
