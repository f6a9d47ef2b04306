"""Runs: pages of them, newest first, and one in full."""

from __future__ import annotations

from dataclasses import dataclass

from cronpilot.domain.access.access import EVERY_JOB, Reach
from cronpilot.domain.model import Endpoint, Run, RunStatus, RunTrigger
from cronpilot.domain.paging import Cursor, Page, page_of
from cronpilot.domain.ports import ReadingFactory, RunFilter
from cronpilot.domain.schedule.time_range import TimeRange
from cronpilot.usecases.queries.reach import job_ids, reached_endpoint, reached_run


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
    reading: ReadingFactory,
    query: RunQuery,
    limit: int,
    after: Cursor | None = None,
    *,
    reach: Reach = EVERY_JOB,
) -> Page[Run]:
    """A page of the runs `query` names in reach, newest slot first, after `after` (the page
    before's `next_cursor`). Raises `JobNotFound` or `EndpointNotFound` for an unknown name."""
    async with reading() as read:
        jobs = await job_ids(read, reach, query.job)
        endpoint_id = (
            None
            if query.endpoint is None
            else (await reached_endpoint(read, query.endpoint, reach)).id
        )
        where = RunFilter(
            None, endpoint_id, query.status, query.trigger, query.within, job_ids=jobs
        )
        rows = await read.runs.page_runs(where, limit + 1, after)
    return page_of(rows, limit, lambda run: Cursor(run.slot_at, run.id))


async def show_run(
    reading: ReadingFactory, run_id: str, *, reach: Reach = EVERY_JOB
) -> tuple[Run, Endpoint]:
    """The run with its endpoint. Raises `RunNotFound`."""
    async with reading() as read:
        run = await reached_run(read, run_id, reach)
        return run, await read.catalog.get_endpoint(run.endpoint_id)
