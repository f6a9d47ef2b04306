"""Runs: pages of them, newest first, and one in full."""

from __future__ import annotations

from dataclasses import dataclass

from cronpilot.domain.model import Endpoint, Run, RunStatus, RunTrigger
from cronpilot.domain.paging import Cursor, Page, page_of
from cronpilot.domain.ports import ReadingFactory, RunFilter
from cronpilot.domain.time_range import TimeRange


@dataclass(frozen=True, slots=True)
class RunQuery:
    """Which runs: each field set narrows the list (`job` by name, `endpoint` by id or
    `job/endpoint`)."""

    job: str | None = None
    endpoint: str | None = None
    status: RunStatus | None = None
    trigger: RunTrigger | None = None
    within: TimeRange | None = None
    """Runs whose slot falls in it."""


async def page_runs(
    reading: ReadingFactory, query: RunQuery, limit: int, after: Cursor | None = None
) -> Page[Run]:
    """A page of the runs `query` names, newest slot first, after `after` (the page before's
    `next_cursor`). Raises `JobNotFound` or `EndpointNotFound` for an unknown name."""
    async with reading() as read:
        job_id = None if query.job is None else (await read.catalog.get_job(query.job)).id
        endpoint_id = (
            None if query.endpoint is None else (await read.catalog.get_endpoint(query.endpoint)).id
        )
        where = RunFilter(job_id, endpoint_id, query.status, query.trigger, query.within)
        rows = await read.runs.page_runs(where, limit + 1, after)
    return page_of(rows, limit, lambda run: Cursor(run.slot_at, run.id))


async def show_run(reading: ReadingFactory, run_id: str) -> tuple[Run, Endpoint]:
    """The run with its endpoint. Raises `RunNotFound`."""
    async with reading() as read:
        run = await read.runs.get_run(run_id)
        return run, await read.catalog.get_endpoint(run.endpoint_id)
