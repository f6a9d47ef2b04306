"""Rows by id or by a unique prefix of one (`domain.ids`): the exact id first, so that a whole
id costs one indexed lookup as before; a prefix then costs a range scan of the primary key."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import ColumnElement, FromClause, RowMapping, select
from sqlalchemy.ext.asyncio import AsyncConnection

from cronpilot.adapters.sql.engine import Database
from cronpilot.domain.ids import CANDIDATES, id_prefix, only_match

_PAST_HEX = "g"
"""Sorts after every hexadecimal digit: `[prefix, prefix + "g")` holds exactly the ids that
start with `prefix`, a range the primary key's index answers in every collation."""


async def resolve_prefix(
    conn: AsyncConnection, column: ColumnElement[str], kind: str, text: str
) -> str | None:
    """The one id in `column` starting with `text` when `text` can be a prefix (None when none
    does, or it cannot be one); raises `AmbiguousId` when several do."""
    prefix = id_prefix(text)
    if prefix is None:
        return None
    query = (
        select(column)
        .where(column >= prefix, column < prefix + _PAST_HEX, column.startswith(prefix))
        .order_by(column)
        .limit(CANDIDATES + 1)
    )
    return only_match(kind, prefix, list((await conn.execute(query)).scalars()))


async def row_by_id(
    conn: AsyncConnection,
    table: FromClause,
    kind: str,
    text: str,
    missing: Callable[[str], Exception],
) -> RowMapping:
    """`table`'s row whose id is `text`, else the one whose id starts with it; raises
    `missing(text)` when there is neither."""
    query = select(table).where(table.c.id == text)
    row = (await conn.execute(query)).mappings().one_or_none()
    if row is not None:
        return row
    found = await resolve_prefix(conn, table.c.id, kind, text)
    if found is None:
        raise missing(text)
    return (await conn.execute(select(table).where(table.c.id == found))).mappings().one()


async def read_by_id(
    db: Database, table: FromClause, kind: str, text: str, missing: Callable[[str], Exception]
) -> RowMapping:
    """`row_by_id` in a read of its own."""
    async with db.read() as conn:
        return await row_by_id(conn, table, kind, text, missing)
