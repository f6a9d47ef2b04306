"""What the planner did: its proposals and its analysis sessions."""

from __future__ import annotations

from dataclasses import dataclass

from cronpilot.domain.access.access import EVERY_JOB, Reach
from cronpilot.domain.model import Endpoint, Job, PlannerMode
from cronpilot.domain.paging import Cursor, Page, page_of
from cronpilot.domain.planning.autonomy import AutonomyStep, threshold_of
from cronpilot.domain.planning.planning import (
    AnalysisSession,
    Proposal,
    ProposalStatus,
    effective_mode,
)
from cronpilot.domain.ports import ReadingFactory
from cronpilot.domain.schedule.time_range import TimeRange
from cronpilot.usecases.queries.reach import (
    job_ids,
    reached_endpoint,
    reached_job,
    reached_jobs,
    reached_proposal,
    reached_session,
)


async def planner_mode(
    reading: ReadingFactory, ref: str, *, reach: Reach = EVERY_JOB
) -> tuple[Endpoint, PlannerMode]:
    """The endpoint and the planner mode in force for it: its own, else its job's. Raises
    `EndpointNotFound`."""
    async with reading() as read:
        endpoint = await reached_endpoint(read, ref, reach)
        job = await read.catalog.get_job(endpoint.job_name)
    return endpoint, effective_mode(endpoint.spec.planner_mode, job.planner_mode)


async def list_proposals(
    reading: ReadingFactory,
    *,
    status: ProposalStatus | None = None,
    job: str | None = None,
    endpoint: str | None = None,
    limit: int = 100,
    after: Cursor | None = None,
    within: TimeRange | None = None,
    reach: Reach = EVERY_JOB,
) -> Page[Proposal]:
    """A page of those in reach, newest first, after `after` (the page before's
    `next_cursor`), optionally those made `within` a window. Raises `JobNotFound` or
    `EndpointNotFound` for an unknown name."""
    async with reading() as read:
        jobs = await job_ids(read, reach, job)
        endpoint_id = (
            None if endpoint is None else (await reached_endpoint(read, endpoint, reach)).id
        )
        rows = await read.planner.list_proposals(
            status=status,
            endpoint_id=endpoint_id,
            limit=limit + 1,
            after=after,
            within=within,
            job_ids=jobs,
        )
    return page_of(rows, limit, lambda p: Cursor(p.created_at, p.id))


async def show_proposal(
    reading: ReadingFactory, proposal_id: str, *, reach: Reach = EVERY_JOB
) -> Proposal:
    """Raises `ProposalNotFound`."""
    async with reading() as read:
        return await reached_proposal(read, proposal_id, reach)


async def list_sessions(
    reading: ReadingFactory,
    endpoint: str | None = None,
    limit: int = 50,
    after: Cursor | None = None,
    within: TimeRange | None = None,
    *,
    reach: Reach = EVERY_JOB,
) -> Page[AnalysisSession]:
    """A page of those in reach, newest first, with their tool calls, optionally those
    started `within` a window. Raises `EndpointNotFound`."""
    async with reading() as read:
        jobs = await job_ids(read, reach)
        endpoint_id = (
            None if endpoint is None else (await reached_endpoint(read, endpoint, reach)).id
        )
        rows = await read.planner.list_sessions(
            endpoint_id=endpoint_id, limit=limit + 1, after=after, within=within, job_ids=jobs
        )
    return page_of(rows, limit, lambda s: Cursor(s.started_at, s.id))


async def show_session(
    reading: ReadingFactory, session_id: str, *, reach: Reach = EVERY_JOB
) -> AnalysisSession:
    """Raises `SessionNotFound`."""
    async with reading() as read:
        return await reached_session(read, session_id, reach)


@dataclass(frozen=True, slots=True)
class JobAutonomy:
    """A job's graded-autonomy threshold and every admin decision that taught it."""

    job: Job
    threshold: float
    history: list[AutonomyStep]
    """Oldest first."""


async def job_autonomy(
    reading: ReadingFactory, job: str | None = None, *, reach: Reach = EVERY_JOB
) -> list[JobAutonomy]:
    """Every job's in reach (by name), or the named one's. Raises `JobNotFound`."""
    async with reading() as read:
        jobs = (
            [await reached_job(read, job, reach)]
            if job is not None
            else await reached_jobs(read, reach)
        )
        shown = []
        for found in jobs:
            history = await read.planner.autonomy_history(found.id)
            latest = history[-1] if history else None
            shown.append(JobAutonomy(found, threshold_of(latest), history))
    return shown
