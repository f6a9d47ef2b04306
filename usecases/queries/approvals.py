"""Approval gates as admins review them."""

from __future__ import annotations

from cronpilot.domain.access.access import EVERY_JOB, Reach
from cronpilot.domain.paging import Cursor, Page, page_of
from cronpilot.domain.planning.approvals import Approval, ApprovalState
from cronpilot.domain.ports import ReadingFactory
from cronpilot.usecases.queries.reach import job_ids, reached_endpoint


async def list_approvals(
    reading: ReadingFactory,
    *,
    state: ApprovalState | None = None,
    job: str | None = None,
    endpoint: str | None = None,
    limit: int = 100,
    after: Cursor | None = None,
    reach: Reach = EVERY_JOB,
) -> Page[Approval]:
    """A page of those in reach, newest request first. Raises `JobNotFound` or
    `EndpointNotFound`."""
    async with reading() as read:
        jobs = await job_ids(read, reach, job)
        endpoint_id = (
            None if endpoint is None else (await reached_endpoint(read, endpoint, reach)).id
        )
        rows = await read.approvals.list_approvals(
            state=state, endpoint_id=endpoint_id, limit=limit + 1, after=after, job_ids=jobs
        )
    return page_of(rows, limit, lambda a: Cursor(a.requested_at, a.id))
