"""Reading the run history recent days first (decision 0047).

On PostgreSQL the history is partitioned by day of slot, with a DEFAULT partition, so it cannot
read its partitions in order: a query for the newest runs of one endpoint probes every day's
index, each a disk read once the history no longer fits in memory (8x slower at 16M runs than
at 1M). A lower bound on the slot lets it read only the days within it. Most reads want recent
runs, so a page is read a day back first, then the week before that, then the rest: each look
reads only days the looks before it did not, for the rows still wanted, so nothing is read
twice; an endpoint that ran within the day costs one look. The bounds are counted from the
newest slot the read can want (the wall clock, a cursor, a window's end): they narrow where to
look first, never what is found. SQLite, with one history table, follows the same steps.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, RowMapping, Select
from sqlalchemy.ext.asyncio import AsyncConnection

LOOKS_BACK: tuple[timedelta, ...] = (timedelta(days=1), timedelta(days=8))


def lower_bounds(
    newest: datetime | None = None, oldest: datetime | None = None
) -> Iterator[datetime | None]:
    """The lower bounds on the slot of each look in turn: a day and a week before `newest`
    (the wall clock when None), while they are after `oldest` (a bound the read has already);
    None last, for no bound."""
    newest = datetime.now(UTC) if newest is None else newest
    for back in LOOKS_BACK:
        since = newest - back
        if oldest is not None and since <= oldest:
            break
        yield since
    yield None


def bounded(query: Select[Any], slot: ColumnElement[datetime], since: datetime | None) -> Any:
    """`query` kept to slots from `since` (None: unchanged)."""
    return query if since is None else query.where(slot >= since)


async def newest_rows(
    conn: AsyncConnection,
    query: Select[Any],
    slot: ColumnElement[datetime],
    wanted: int,
    *,
    newest: datetime | None = None,
    oldest: datetime | None = None,
) -> list[RowMapping]:
    """The first `wanted` rows of `query` (newest slots first, no limit of its own), read a
    look at a time (module note)."""
    rows: list[RowMapping] = []
    until: datetime | None = None
    for since in lower_bounds(newest, oldest):
        look = bounded(query, slot, since)
        if until is not None:
            look = look.where(slot < until)
        found = await conn.execute(look.limit(wanted - len(rows)))
        rows += found.mappings().all()
        if len(rows) >= wanted:
            break
        until = since
    return rows
