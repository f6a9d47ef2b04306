"""The alerts outbox as webhooks hear of it."""

from __future__ import annotations

from cronpilot.domain.alerts import Notification, NotificationStatus
from cronpilot.domain.paging import Cursor, Page, page_of
from cronpilot.domain.ports import ReadingFactory
from cronpilot.domain.time_range import TimeRange


async def list_notifications(
    reading: ReadingFactory,
    *,
    job: str | None = None,
    endpoint: str | None = None,
    status: NotificationStatus | None = None,
    limit: int = 100,
    after: Cursor | None = None,
    within: TimeRange | None = None,
) -> Page[Notification]:
    """A page of the alerts outbox, newest first, optionally those raised `within` a window.
    Raises `JobNotFound` or `EndpointNotFound`."""
    async with reading() as read:
        job_id = None if job is None else (await read.catalog.get_job(job)).id
        endpoint_id = None if endpoint is None else (await read.catalog.get_endpoint(endpoint)).id
        rows = await read.notifications.list_notifications(
            job_id=job_id,
            endpoint_id=endpoint_id,
            status=status,
            limit=limit + 1,
            after=after,
            within=within,
        )
    return page_of(rows, limit, lambda n: Cursor(n.created_at, n.id))
