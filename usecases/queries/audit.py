"""The audit log a page at a time, as `cronpilot audit list` and `GET /audit` show it."""

from __future__ import annotations

from cronpilot.domain.access.audit import AuditAction, AuditCursor, AuditEntry
from cronpilot.domain.paging import Cursor, Page, page_of
from cronpilot.domain.ports import ReadingFactory
from cronpilot.domain.schedule.time_range import TimeRange


async def page_audit(
    reading: ReadingFactory,
    *,
    actor: str | None = None,
    action: AuditAction | None = None,
    limit: int = 100,
    after: Cursor | None = None,
    within: TimeRange | None = None,
) -> Page[AuditEntry]:
    """A page of the audit log newest first, optionally the entries made `within` a window;
    the next page starts after the page's `next_cursor`."""
    before = None if after is None else AuditCursor(after.at, after.id)
    async with reading() as tx:
        rows = await tx.access.list_audit(
            actor=actor, action=action, limit=limit + 1, before=before, within=within
        )
    return page_of(rows, limit, lambda entry: Cursor(entry.at, entry.id))
