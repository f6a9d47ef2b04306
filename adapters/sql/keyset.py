"""Keyset paging in SQL: the rows after a cursor, in the order `domain.paging.follows` says."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ColumnElement, and_, or_

from cronpilot.domain.paging import Cursor


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
