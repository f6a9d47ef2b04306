"""Keyset paging: a list read newest first resumes after the last item a page held, named by its
(time, id); a list in name order (jobs, endpoints) after the name of the last item. Unlike an
offset, a cursor neither repeats nor skips items when rows are added or removed between two
pages. Clients see the cursor as an opaque token (`encode_cursor`, `encode_name_cursor`)."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

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
    return _token([cursor.at.isoformat(), cursor.id])


def decode_cursor(token: str) -> Cursor:
    """Raises `InvalidCursor` for a token `encode_cursor` did not make."""
    try:
        at, item_id = _list(token)
        moment = datetime.fromisoformat(at)
    except (ValueError, TypeError) as exc:
        raise InvalidCursor(token) from exc
    if not isinstance(item_id, str) or moment.tzinfo is None:
        raise InvalidCursor(token)
    return Cursor(moment, item_id)


Name = tuple[str, ...]
"""What orders a list in name order: (job,) for jobs, (job, endpoint) for endpoints."""


@dataclass(frozen=True, slots=True)
class NamedPage(Generic[T]):
    items: list[T]
    next_after: Name | None
    """The name of the last item, after which the next page starts; None on the last page."""


def named_page(
    items: Sequence[T], limit: int, after: Name | None, name: Callable[[T], Name]
) -> NamedPage[T]:
    """The first `limit` of `items` by `name` whose name sorts after `after` (all: None)."""
    rest = sorted((i for i in items if after is None or name(i) > after), key=name)
    kept = rest[:limit]
    return NamedPage(kept, name(kept[-1]) if len(rest) > limit else None)


def encode_name_cursor(name: Name) -> str:
    return _token(list(name))


def decode_name_cursor(token: str, size: int) -> Name:
    """Raises `InvalidCursor` for a token `encode_name_cursor` did not make of a name of
    `size` parts."""
    parts = _list(token)
    if len(parts) != size or not all(isinstance(part, str) for part in parts):
        raise InvalidCursor(token)
    return tuple(parts)


def _token(parts: list[str]) -> str:
    raw = json.dumps(parts, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _list(token: str) -> list[Any]:
    """The list a token holds; raises `InvalidCursor` for anything else."""
    try:
        parts = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    except (binascii.Error, ValueError, UnicodeDecodeError) as exc:
        raise InvalidCursor(token) from exc
    if not isinstance(parts, list):
        raise InvalidCursor(token)
    return parts
