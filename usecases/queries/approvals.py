"""Approval gates as admins review them."""

from __future__ import annotations

from cronpilot.domain.approvals import Approval, ApprovalState
from cronpilot.domain.paging import Cursor, Page, page_of
from cronpilot.domain.ports import ReadingFactory


async def list_approvals(
    reading: ReadingFactory,
    *,
    state: ApprovalState | None = None,
    job: str | None = None,
    endpoint: str | None = None,
    limit: int = 100,
    after: Cursor | None = None,
) -> Page[Approval]:
    """A page of them, newest request first. Raises `JobNotFound` or `EndpointNotFound`."""
    async with reading() as read:
        job_id = None if job is None else (await read.catalog.get_job(job)).id
        endpoint_id = None if endpoint is None else (await read.catalog.get_endpoint(endpoint)).id
        rows = await read.approvals.list_approvals(
            state=state, job_id=job_id, endpoint_id=endpoint_id, limit=limit + 1, after=after
        )
    return page_of(rows, limit, lambda a: Cursor(a.requested_at, a.id))
