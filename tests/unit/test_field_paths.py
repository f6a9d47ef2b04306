"""Field paths: one syntax (`rows[0].id`), the dotted position still read, schema checks."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cronpilot.domain.graph.field_paths import (
    MISSING,
    FieldPathError,
    canonical,
    follow,
    parse_field_path,
    unseen_field,
)
from cronpilot.domain.graph.schema_inference import ShapeNode


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ("status", ("status",)),
        ("rows[0].id", ("rows", 0, "id")),
        ("rows.0.id", ("rows", 0, "id")),
        ("meta.request-id", ("meta", "request-id")),
        ("a[1][2]", ("a", 1, 2)),
    ],
)
def test_both_ways_of_writing_a_position_read_the_same_path(text: str, path: tuple) -> None:
    assert parse_field_path(text) == path
    assert parse_field_path(canonical(path)) == path


@pytest.mark.parametrize(
    "text", ["", ".a", "a.", "a..b", "[0]", "a[x]", "a b", "a[0]b", "a[*]", "a[-1]"]
)
def test_a_path_that_cannot_be_read_is_refused_saying_how_to_write_it(text: str) -> None:
    with pytest.raises(FieldPathError, match=r"rows\[0\]\.id|projections only"):
        parse_field_path(text)


def test_every_element_is_for_projections() -> None:
    assert parse_field_path("items[*].id", every=True) == ("items", None, "id")
    assert canonical(("items", None, "id")) == "items[*].id"


keys = st.from_regex(r"[A-Za-z_][A-Za-z0-9_-]{0,6}", fullmatch=True)
steps = st.one_of(keys, st.integers(min_value=0, max_value=99))


@given(st.tuples(keys), st.lists(steps, max_size=6))
def test_canonical_text_reads_back_as_the_same_path(head: tuple, rest: list) -> None:
    path = (*head, *rest)
    assert parse_field_path(canonical(path)) == path


def test_follow_tells_a_missing_field_from_a_null() -> None:
    document = {"rows": [{"id": 5, "note": None}], "2024": {"total": 3}}
    assert follow(document, ("rows", 0, "id")) == 5
    assert follow(document, ("rows", -1, "note")) is None
    assert follow(document, ("rows", 1, "id")) is MISSING
    assert follow(document, ("rows", 0, "absent")) is MISSING
    assert follow(document, (2024, "total")) == 3
    assert follow(document, ("rows", "id")) is MISSING


def test_a_field_the_schema_never_saw_names_the_fields_it_did() -> None:
    root = ShapeNode.from_dict(
        {
            "seen": 2,
            "types": {"object": 2},
            "properties": {
                "rows": {
                    "seen": 2,
                    "types": {"array": 2},
                    "items": {
                        "seen": 3,
                        "types": {"object": 3},
                        "properties": {"id": {"seen": 3, "types": {"integer": 3}}},
                    },
                },
                "total": {"seen": 2, "types": {"integer": 2}},
            },
        }
    )
    assert unseen_field(root, ("rows", 0, "id")) is None
    found = unseen_field(root, ("rows", 0, "name"))
    assert found is not None
    assert (
        found.phrase("fetch") == "'fetch' has answered no field 'name' in rows[0] (its fields: id)"
    )
    top = unseen_field(root, ("count",))
    assert top is not None
    assert top.phrase("fetch") == (
        "'fetch' has answered no field 'count' in its response (its fields: rows, total)"
    )
