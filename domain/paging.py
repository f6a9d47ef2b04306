"""Keyset paging: a list read newest first resumes after the last item a page held, named by its
(time, id). Unlike an offset, a cursor neither repeats nor skips items when rows are added or
removed between two pages. Clients see the cursor as an opaque token (`encode_cursor`)."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Generic, TypeVar

from cronpilot.domain.errors import InvalidCursor

T = TypeVar("T")


@dataclass(frozen=True, slots=True, order=True)
class Cursor:
    """The (time, id) of the last item of a page: the next page holds what sorts after it,
    newest first (`follows`)."""

    at: datetime
    id: str


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    items: list[T]
    next_cursor: Cursor | None
    """None on the last page."""


def follows(
    at: datetime, item_id: str, cursor: Cursor | None, *, ids_ascending: bool = False
) -> bool:
    """Whether an item at (at, id) comes after `cursor` in newest-first order, items of one
    time by id descending (or ascending, as some lists have always been ordered)."""
    if cursor is None or at < cursor.at:
        return True
    if at > cursor.at:
        return False
    return item_id > cursor.id if ids_ascending else item_id < cursor.id


def page_of(rows: list[T], limit: int, key: Callable[[T], Cursor]) -> Page[T]:
    """`rows` read with `limit + 1` as their limit: the extra row says a next page exists,
    which starts after the last row kept (`key` gives its cursor)."""
    if len(rows) <= limit:
        return Page(rows, None)
    kept = rows[:limit]
    return Page(kept, key(kept[-1]))


def encode_cursor(cursor: Cursor) -> str:
    raw = json.dumps([cursor.at.isoformat(), cursor.id], separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(token: str) -> Cursor:
    """Raises `InvalidCursor` for a token `encode_cursor` did not make."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        at, item_id = json.loads(raw)
        moment = datetime.fromisoformat(at)
    except (binascii.Error, ValueError, TypeError, UnicodeDecodeError) as exc:
        raise InvalidCursor(token) from exc
    if not isinstance(item_id, str) or moment.tzinfo is None:
        raise InvalidCursor(token)
    return Cursor(moment, item_id)
