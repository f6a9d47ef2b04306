"""The alerts outbox as webhooks hear of it."""

from __future__ import annotations

from cronpilot.domain.access.access import EVERY_JOB, Reach
from cronpilot.domain.alerts.alerts import Notification, NotificationStatus
from cronpilot.domain.paging import Cursor, Page, page_of
from cronpilot.domain.ports import ReadingFactory
from cronpilot.domain.schedule.time_range import TimeRange
from cronpilot.usecases.queries.reach import job_ids, reached_endpoint


async def list_notifications(
    reading: ReadingFactory,
    *,
    job: str | None = None,
    endpoint: str | None = None,
    status: NotificationStatus | None = None,
    limit: int = 100,
    after: Cursor | None = None,
    within: TimeRange | None = None,
    reach: Reach = EVERY_JOB,
) -> Page[Notification]:
    """A page of the alerts outbox in reach, newest first, optionally those raised `within` a
    window. Raises `JobNotFound` or `EndpointNotFound`."""
    async with reading() as read:
        jobs = await job_ids(read, reach, job)
        endpoint_id = (
            None if endpoint is None else (await reached_endpoint(read, endpoint, reach)).id
        )
        rows = await read.notifications.list_notifications(
            job_ids=jobs,
            endpoint_id=endpoint_id,
            status=status,
            limit=limit + 1,
            after=after,
            within=within,
        )
    return page_of(rows, limit, lambda n: Cursor(n.created_at, n.id))
