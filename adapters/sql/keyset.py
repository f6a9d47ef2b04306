"""Keyset paging in SQL: the rows after a cursor, in the order `domain.paging.follows` says."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ColumnElement, and_, or_

from cronpilot.domain.paging import Cursor
from cronpilot.domain.time_range import TimeRange


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
    """The conditions that keep `at` in `window` (`domain.time_range.TimeRange.holds`): none
    for no window, so `query.where(*within(...))` reads the same either way."""
    if window is None:
        return []
    bounds = []
    if window.since is not None:
        bounds.append(at >= window.since)
    if window.until is not None:
        bounds.append(at < window.until)
    return bounds
