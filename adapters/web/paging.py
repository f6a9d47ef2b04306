"""The paging every list route shares: `?limit=&cursor=` in, `{items, next_cursor}` out."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from fastapi import Query

from cronpilot.domain.paging import (
    Cursor,
    Name,
    NamedPage,
    Page,
    decode_cursor,
    decode_name_cursor,
    encode_cursor,
    encode_name_cursor,
)
from cronpilot.domain.ports import ReadingFactory
from cronpilot.usecases.queries.catalog import E, beside_refs

T = TypeVar("T")

MAX_PAGE = 500

Limit = Annotated[int, Query(ge=1, le=MAX_PAGE, description="Items per page, newest first.")]
CursorToken = Annotated[
    str | None, Query(alias="cursor", description="The `next_cursor` of the page before.")
]


def after(token: str | None) -> Cursor | None:
    """Raises `InvalidCursor` for a token no page handed out."""
    return None if token is None else decode_cursor(token)


def page_view(page: Page[T], view: Callable[[T], dict[str, Any]]) -> dict[str, Any]:
    return _paged([view(item) for item in page.items], page)


async def endpoint_page_view(
    reading: ReadingFactory, page: Page[E], view: Callable[[E, str], dict[str, Any]]
) -> dict[str, Any]:
    """`page_view` for items of an endpoint, each viewed beside its `job/endpoint` ref (`?` for
    one deleted since)."""
    return _paged([view(*pair) for pair in await beside_refs(reading, page.items)], page)


def _paged(items: list[dict[str, Any]], page: Page[Any]) -> dict[str, Any]:
    """`next_cursor` is null on the last page."""
    return {
        "items": items,
        "next_cursor": None if page.next_cursor is None else encode_cursor(page.next_cursor),
    }


def after_name(token: str | None, size: int) -> Name | None:
    """For a list in name order; raises `InvalidCursor` for a token no such page handed out."""
    return None if token is None else decode_name_cursor(token, size)


def named_page_view(page: NamedPage[T], view: Callable[[T], dict[str, Any]]) -> dict[str, Any]:
    """The shape of `page_view`."""
    after = page.next_after
    return {
        "items": [view(item) for item in page.items],
        "next_cursor": None if after is None else encode_name_cursor(after),
    }
