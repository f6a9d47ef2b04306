"""Runs: pages of them, one in full, runs asked for by hand, cancel and retry."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import Field

from cronpilot.adapters.api.access import Reader, Writer
from cronpilot.adapters.api.responses import TidyJSONResponse
from cronpilot.adapters.api.windows import Within
from cronpilot.adapters.views.formats import iso
from cronpilot.adapters.views.runs import retry_view, run_view
from cronpilot.adapters.web.context import Context
from cronpilot.adapters.web.paging import CursorToken, Limit, after, page_view
from cronpilot.adapters.web.strict import StrictBody
from cronpilot.domain.model import RunStatus, RunTrigger
from cronpilot.domain.runs.requested_runs import DEFAULT_MAX_SLOTS, MAX_SLOTS
from cronpilot.usecases.queries.reach import check_target
from cronpilot.usecases.queries.runs import RunQuery, page_runs, show_run
from cronpilot.usecases.run_control import cancel_run, clear_dag, retry_run
from cronpilot.usecases.run_requests import request_backfill, request_run

router = APIRouter(tags=["runs"])


@router.get("/runs")
async def get_runs(
    *,
    ctx: Context,
    who: Reader,
    job: str | None = None,
    endpoint: Annotated[str | None, Query(description="`job/endpoint` or an endpoint id")] = None,
    status: RunStatus | None = None,
    trigger: RunTrigger | None = None,
    limit: Limit = 50,
    cursor: CursorToken = None,
    within: Within,
) -> dict[str, Any]:
    """Runs newest slot first, a page at a time: pass `next_cursor` back as `cursor` until
    it is null. Runs recorded meanwhile do not shift the pages."""
    query = RunQuery(job, endpoint, status, trigger, within)
    page = await page_runs(ctx.store.reading, query, limit, after(cursor), reach=who.reach)
    return page_view(page, lambda run: run_view(run, with_body=False))


@router.get("/runs/{run_id}", response_model=dict[str, Any])
async def get_run(run_id: str, ctx: Context, who: Reader) -> TidyJSONResponse:
    """One run in full, with its stored response body."""
    run, endpoint = await show_run(ctx.store.reading, run_id, reach=who.reach)
    return TidyJSONResponse({**run_view(run, with_body=True), "endpoint": endpoint.ref})


@router.post("/runs/{run_id}/cancel")
async def cancel(run_id: str, ctx: Context, who: Writer) -> dict[str, Any]:
    """Cancel a run: a queued one is `cancelled` at once and never starts; a running one is
    marked (`cancel_requested_by`), and the worker holding it cuts it short and records it
    `cancelled`. A finished run is refused (409), an unknown one 404."""
    await check_target(ctx.store.reading, who.reach, run=run_id)
    run = await cancel_run(ctx.store.unit_of_work, run_id, who.actor, ctx.clock.now())
    return run_view(run, with_body=False)


@router.post("/runs/{run_id}/retry", status_code=202)
async def retry(run_id: str, ctx: Context, who: Writer) -> dict[str, Any]:
    """Queue a new manual run, due now, of the run's endpoint; the run itself stays as it is.
    A DAG dependant's run: its node re-runs alone in its DAG run, with its upstreams' answers
    there, which a scheduler's DAG sweep starts (`{"rerun": "job/endpoint"}`)."""
    await check_target(ctx.store.reading, who.reach, run=run_id)
    retried = await retry_run(ctx.store.unit_of_work, ctx.waker, run_id, who.actor, ctx.clock.now())
    return retry_view(retried)


class ClearRequest(StrictBody):
    node: str = Field(min_length=1, max_length=200, description="The endpoint's name in the job.")


@router.post("/runs/{run_id}/clear", status_code=202)
async def clear(run_id: str, request: ClearRequest, ctx: Context, who: Writer) -> dict[str, Any]:
    """Re-run `node` and what depends on it in the DAG run this run began (or belongs to),
    with the answers its upstreams gave in it; a scheduler's DAG sweep starts it."""
    await check_target(ctx.store.reading, who.reach, run=run_id)
    cleared = await clear_dag(
        ctx.store.unit_of_work,
        ctx.waker,
        run_id,
        request.node,
        actor=who.actor,
        now=ctx.clock.now(),
    )
    return {"cleared": cleared.ref}


@router.post("/endpoints/{job}/{name}/run", status_code=202)
async def run_now(job: str, name: str, ctx: Context, who: Writer) -> dict[str, Any]:
    """Queue one run due now (trigger `manual`); a scheduler worker makes it."""
    await check_target(ctx.store.reading, who.reach, endpoint=f"{job}/{name}")
    run = await request_run(
        ctx.store.unit_of_work, ctx.waker, f"{job}/{name}", who.actor, ctx.clock.now()
    )
    return run_view(run, with_body=False)


class BackfillRequest(StrictBody):
    start: datetime = Field(description="First slot; without an offset, the endpoint's zone.")
    end: datetime = Field(description="Last slot, written as `start`.")
    max_slots: int = Field(default=DEFAULT_MAX_SLOTS, ge=1, le=MAX_SLOTS)


@router.post("/endpoints/{job}/{name}/backfill", status_code=202)
async def backfill(
    job: str, name: str, request: BackfillRequest, ctx: Context, who: Writer
) -> dict[str, Any]:
    """Queue a run for each past baseline slot in [start, end] that has none."""
    await check_target(ctx.store.reading, who.reach, endpoint=f"{job}/{name}")
    report = await request_backfill(
        ctx.store.unit_of_work,
        ctx.waker,
        f"{job}/{name}",
        start=request.start,
        end=request.end,
        max_slots=request.max_slots,
        actor=who.actor,
        now=ctx.clock.now(),
    )
    return {
        "endpoint": report.endpoint.ref,
        "queued": len(report.queued),
        "skipped": report.skipped,
        "runs": [
            {"id": r.id, "slot_at": iso(r.slot_at), "due_at": iso(r.due_at)} for r in report.queued
        ],
    }
