"""Retention's DELETE (`domain.runs.retention`): a bounded batch of the oldest rows that may go, in
one statement (one short transaction), so that a backlog of old rows is pruned a batch at a time
while claims and finishes go on between batches."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import ColumnElement, Table, delete, select

from cronpilot.adapters.sql.engine import Database


async def delete_oldest(
    db: Database,
    table: Table,
    where: ColumnElement[bool],
    oldest_first: Sequence[ColumnElement[object]],
    limit: int,
) -> int:
    """Delete up to `limit` rows of `table` (keyed by `id`) matching `where`, in
    `oldest_first` order; returns how many. The caller's `where` reads an indexed time column,
    so a pass that finds nothing to prune costs one index probe."""
    key = table.c.id
    doomed = select(key).where(where).order_by(*oldest_first).limit(max(limit, 0))
    return await db.write_one(delete(table).where(key.in_(doomed)))
