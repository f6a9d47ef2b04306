"""Cursors: opaque tokens that round-trip, refused when mangled; `follows` orders pages."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from cronpilot.domain.errors import InvalidCursor
from cronpilot.domain.paging import (
    Cursor,
    decode_cursor,
    decode_name_cursor,
    encode_cursor,
    encode_name_cursor,
    follows,
    named_page,
    page_of,
)

AT = datetime(2030, 1, 1, 12, 0, 0, 123456, tzinfo=UTC)


def test_a_cursor_round_trips_through_its_token() -> None:
    cursor = Cursor(AT, "abc123")
    token = encode_cursor(cursor)
    assert "=" not in token and "/" not in token and "+" not in token
    assert decode_cursor(token) == cursor


@pytest.mark.parametrize(
    "token",
    [
        "",
        "garbage!",
        encode_cursor(Cursor(AT, "x"))[:-3],
        # Well-formed base64 of the wrong things: no list, a naive time, an id not text.
        "eyJhIjoxfQ",
        "WyIyMDMwLTAxLTAxVDEyOjAwOjAwIiwieCJd",
        "WyIyMDMwLTAxLTAxVDEyOjAwOjAwKzAwOjAwIiwxXQ",
    ],
)
def test_a_mangled_token_is_refused_naming_it(token: str) -> None:
    with pytest.raises(InvalidCursor, match="invalid cursor"):
        decode_cursor(token)


def test_follows_orders_by_time_then_id_either_way() -> None:
    cursor = Cursor(AT, "m")
    assert follows(AT - timedelta(seconds=1), "z", cursor)
    assert not follows(AT + timedelta(seconds=1), "a", cursor)
    assert follows(AT, "a", cursor) and not follows(AT, "z", cursor)
    assert follows(AT, "z", cursor, ids_ascending=True)
    assert not follows(AT, "m", cursor) and not follows(AT, "m", cursor, ids_ascending=True)
    assert follows(AT, "m", None)


def test_a_page_has_a_next_cursor_only_when_a_row_was_left_over() -> None:
    key = lambda n: Cursor(AT, str(n))  # noqa: E731
    assert page_of([1, 2], 2, key).next_cursor is None
    page = page_of([1, 2, 3], 2, key)
    assert (page.items, page.next_cursor) == ([1, 2], Cursor(AT, "2"))


def test_a_list_in_name_order_pages_by_parts_not_by_joined_text() -> None:
    # As text `a-b/x` sorts before `a/x` ('-' < '/'); by (job, endpoint) `a` comes first.
    refs = [("a-b", "x"), ("a", "y"), ("a", "x"), ("b", "a")]

    first = named_page(refs, 2, None, lambda ref: ref)
    second = named_page(refs, 2, first.next_after, lambda ref: ref)

    assert (first.items, first.next_after) == ([("a", "x"), ("a", "y")], ("a", "y"))
    assert (second.items, second.next_after) == ([("a-b", "x"), ("b", "a")], None)


def test_a_name_cursor_round_trips_and_is_refused_for_another_list() -> None:
    token = encode_name_cursor(("shop", "stock"))

    assert decode_name_cursor(token, 2) == ("shop", "stock")
    for wrong in (lambda: decode_name_cursor(token, 1), lambda: decode_name_cursor("x!", 2)):
        with pytest.raises(InvalidCursor, match="invalid cursor"):
            wrong()
    with pytest.raises(InvalidCursor):
        decode_name_cursor(encode_cursor(Cursor(AT, "x")), 1)
