"""Keyset paging in SQL: the rows after a cursor, in the order `domain.paging.follows` says."""

from __future__ import annotations

from datetime import datetime
from enum import Enum

from sqlalchemy import ColumnElement, Select, Table, and_, or_, select

from cronpilot.domain.paging import Cursor
from cronpilot.domain.schedule.time_range import TimeRange


def after_cursor(
    at: ColumnElement[datetime],
    item_id: ColumnElement[str],
    cursor: Cursor,
    *,
    ids_ascending: bool = False,
) -> ColumnElement[bool]:
    later = item_id > cursor.id if ids_ascending else item_id < cursor.id
    # `at <= cursor.at` is implied by the rest; said alone, PostgreSQL can start an index scan
    # at the cursor (an index condition) instead of filtering every newer row first.
    return and_(at <= cursor.at, or_(at < cursor.at, and_(at == cursor.at, later)))


def in_window(at: ColumnElement[datetime], window: TimeRange | None) -> list[ColumnElement[bool]]:
    """The conditions that keep `at` in `window` (`domain.schedule.time_range.TimeRange.holds`):
    none for no window, so `query.where(*within(...))` reads the same either way."""
    if window is None:
        return []
    bounds = []
    if window.since is not None:
        bounds.append(at >= window.since)
    if window.until is not None:
        bounds.append(at < window.until)
    return bounds


def newest_first(
    table: Table,
    at: ColumnElement[datetime],
    after: Cursor | None = None,
    within: TimeRange | None = None,
    **equal: object,
) -> Select[tuple[object, ...]]:
    """A page's query of `table`: newest `at` first (ties by id, descending), after `after`, in
    `within`, each column named in `equal` holding its value (an enum's value; None: any)."""
    conditions = [
        table.c[name] == (value.value if isinstance(value, Enum) else value)
        for name, value in equal.items()
        if value is not None
    ]
    if after is not None:
        conditions.append(after_cursor(at, table.c.id, after))
    return (
        select(table)
        .where(*in_window(at, within), *conditions)
        .order_by(at.desc(), table.c.id.desc())
    )
