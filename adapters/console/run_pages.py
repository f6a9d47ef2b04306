"""Runs: a filtered list a page at a time, and one run in full (the request sent, the answer
or why none was stored, every attempt)."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlencode

from fastapi import Query, Request, Response

from cronpilot.adapters.console.pages import (
    PAGE,
    PREFIX,
    SignedIn,
    Writing,
    back,
    choice,
    console_router,
    render,
)
from cronpilot.adapters.views.runs import run_view
from cronpilot.adapters.web.context import Context
from cronpilot.adapters.web.paging import after
from cronpilot.domain.model import RunStatus, RunTrigger
from cronpilot.domain.paging import encode_cursor
from cronpilot.domain.runs.requested_runs import retryable
from cronpilot.usecases.queries.catalog import endpoint_refs, list_jobs
from cronpilot.usecases.queries.reach import check_target
from cronpilot.usecases.queries.runs import RunQuery, page_runs, show_run
from cronpilot.usecases.run_control import cancel_run, clear_dag, retry_run

router = console_router()


@router.get("/runs")
async def runs(
    *,
    request: Request,
    ctx: Context,
    who: SignedIn,
    job: Annotated[str | None, Query()] = None,
    endpoint: Annotated[str | None, Query()] = None,
    status: Annotated[str | None, Query()] = None,
    trigger: Annotated[str | None, Query()] = None,
    cursor: Annotated[str | None, Query()] = None,
) -> Response:
    reading, reach = ctx.store.reading, who.reach
    query = RunQuery(
        job, endpoint, choice(RunStatus, "status", status), choice(RunTrigger, "trigger", trigger)
    )
    page = await page_runs(reading, query, PAGE, after(cursor), reach=reach)
    refs = await endpoint_refs(reading, reach=reach)
    return render(
        request,
        "runs.html",
        who,
        ctx.clock.now(),
        recent=[
            run_view(r, with_body=False) | {"endpoint": refs.get(r.endpoint_id, "?")}
            for r in page.items
        ],
        show_endpoint=True,
        query=query,
        jobs=[j.job.name for j in await list_jobs(reading, reach=reach)],
        statuses=[s.value for s in RunStatus],
        triggers=[t.value for t in RunTrigger],
        older=None if page.next_cursor is None else _older(query, encode_cursor(page.next_cursor)),
    )


def _older(query: RunQuery, cursor: str) -> str:
    """The query of the next page: the filters in force and the cursor (no empty one, which a
    page refuses)."""
    filters = {
        "job": query.job,
        "endpoint": query.endpoint,
        "status": query.status and query.status.value,
        "trigger": query.trigger and query.trigger.value,
    }
    return urlencode({**{k: v for k, v in filters.items() if v}, "cursor": cursor})


@router.post("/runs/{run_id}/cancel")
async def cancel(run_id: str, ctx: Context, act: Writing) -> Response:
    await check_target(ctx.store.reading, act.reach, run=run_id)
    asked = await cancel_run(ctx.store.unit_of_work, run_id, act.actor, ctx.clock.now())
    note = "cancelled" if asked.status is RunStatus.CANCELLED else "cancel-asked"
    return back(f"{PREFIX}/runs/{asked.id}", note)


@router.post("/runs/{run_id}/retry")
async def retry(run_id: str, ctx: Context, act: Writing) -> Response:
    await check_target(ctx.store.reading, act.reach, run=run_id)
    retried = await retry_run(ctx.store.unit_of_work, ctx.waker, run_id, act.actor, ctx.clock.now())
    if retried.run is None:
        return back(f"{PREFIX}/runs/{run_id}", "retried-alone")
    return back(f"{PREFIX}/runs/{retried.run.id}", "retried")


@router.post("/runs/{run_id}/clear")
async def clear(run_id: str, ctx: Context, act: Writing) -> Response:
    """Re-run this run's endpoint and what depends on it, in its DAG run."""
    found, endpoint = await show_run(ctx.store.reading, run_id, reach=act.reach)
    await clear_dag(
        ctx.store.unit_of_work,
        ctx.waker,
        found.id,
        endpoint.name,
        actor=act.actor,
        now=ctx.clock.now(),
    )
    return back(f"{PREFIX}/runs/{found.id}", "cleared")


@router.get("/runs/{run_id}")
async def run(request: Request, run_id: str, ctx: Context, who: SignedIn) -> Response:
    found, endpoint = await show_run(ctx.store.reading, run_id, reach=who.reach)
    return render(
        request,
        "run.html",
        who,
        ctx.clock.now(),
        run=run_view(found, with_body=True),
        ref=endpoint.ref,
        retryable=retryable(found),
    )
