"""Output-schema inference: soundness (every document merged validates), widening, required
with memory, counts, bounded items, depth limit, formats and drift."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from cronpilot.domain.graph.schema_inference import (
    MAX_DEPTH,
    MAX_ITEMS_MERGED,
    ShapeNode,
    merge_document,
    string_formats,
    to_json_schema,
)

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
    | st.sampled_from(
        [
            "2026-11-22T21:05:00Z",
            "2026-11-22T21:05:00.123+01:00",
            "https://example.com/a",
            "ops@example.com",
            "6f1c2a34-9b2d-4c3e-8f00-1a2b3c4d5e6f",
        ]
    )
)
KEYS = st.sampled_from(["id", "name", "items", "data", "when", "n", "tags"])
DOCUMENTS = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=25,
)


def _merged(*documents: Any) -> ShapeNode:
    root = ShapeNode()
    for document in documents:
        merge_document(root, document)
    return root


def _validator(root: ShapeNode) -> Draft202012Validator:
    schema = to_json_schema(root)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)


@settings(max_examples=300, deadline=None)
@given(st.lists(DOCUMENTS, min_size=1, max_size=6))
def test_every_document_merged_validates_against_the_merged_schema(documents: list[Any]) -> None:
    root = _merged(*documents)
    validator = _validator(root)
    for document in documents:
        errors = [error.message for error in validator.iter_errors(document)]
        assert errors == [], (document, to_json_schema(root))


@settings(max_examples=100, deadline=None)
@given(st.lists(DOCUMENTS, min_size=1, max_size=4))
def test_the_stored_form_round_trips(documents: list[Any]) -> None:
    root = _merged(*documents)
    assert ShapeNode.from_dict(root.to_dict()) == root


def test_integer_and_number_widen_to_number_and_other_types_form_a_union() -> None:
    schema = to_json_schema(_merged({"v": 1}, {"v": 2.5}, {"v": None}))
    assert schema["properties"]["v"]["type"] == ["null", "number"]


def test_required_means_present_in_every_observation_and_stays_optional_once_missing() -> None:
    root = _merged({"a": 1, "b": 1}, {"a": 2})
    assert to_json_schema(root)["required"] == ["a"]
    for _ in range(10):
        merge_document(root, {"a": 3, "b": 3})
    schema = to_json_schema(root)
    assert schema["required"] == ["a"]
    assert schema["properties"]["b"]["x-seen"] == 11
    assert schema["properties"]["a"]["x-seen"] == 12
    assert schema["properties"]["a"]["x-confidence"] > schema["properties"]["b"]["x-confidence"]


def test_array_items_are_merged_from_every_element() -> None:
    schema = to_json_schema(_merged({"rows": [{"id": 1}, {"id": 2, "note": "x"}, {"id": "a"}]}))
    items = schema["properties"]["rows"]["items"]
    assert items["properties"]["id"]["type"] == ["integer", "string"]
    assert items["required"] == ["id"]


def test_elements_past_the_bound_still_widen_the_schema_but_are_not_counted() -> None:
    rows: list[Any] = [{"id": i} for i in range(MAX_ITEMS_MERGED * 3)]
    rows.append({"id": "odd"})
    schema = to_json_schema(_merged(rows))
    assert schema["items"]["x-seen"] == MAX_ITEMS_MERGED + 1
    assert schema["items"]["properties"]["id"]["type"] == ["integer", "string"]


def test_structure_below_the_depth_limit_is_typed_but_not_described() -> None:
    deep: Any = {"leaf": 1}
    for _ in range(MAX_DEPTH + 3):
        deep = {"down": deep}
    schema = to_json_schema(_merged(deep))
    node = schema
    for _ in range(MAX_DEPTH):
        node = node["properties"]["down"]
    assert node == {"type": "object", "x-seen": 1, "x-confidence": 0.25}


def test_formats_are_stated_only_when_every_string_had_them() -> None:
    uid = "6f1c2a34-9b2d-4c3e-8f00-1a2b3c4d5e6f"
    assert string_formats(uid) == {"uuid"}
    assert string_formats("2026-11-22T21:05:00Z") == {"date-time"}
    assert string_formats("2026-11-22 21:05") == set()
    assert string_formats("mailto:x") == set()
    assert string_formats("x@y.io") == {"email"}
    assert string_formats("https://[::1]/a") == {"uri"}
    assert string_formats("http://[oops/a") == set()
    schema = to_json_schema(_merged({"id": uid, "at": "2026-11-22T21:05:00Z"}))
    assert schema["properties"]["id"]["format"] == "uuid"
    assert schema["properties"]["at"]["format"] == "date-time"
    mixed = to_json_schema(_merged({"id": uid}, {"id": "not-a-uuid"}))
    assert "format" not in mixed["properties"]["id"]


def test_drift_names_what_changed_and_the_first_document_is_no_drift() -> None:
    root = ShapeNode()
    assert merge_document(root, {"a": 1, "b": "x"}) == []
    assert merge_document(root, {"a": 1, "b": "x"}) == []
    changes = [str(c) for c in merge_document(root, {"a": "one", "c": True})]
    assert changes == ["b: now optional", "a: new type string", "c: new field"]
    assert [str(c) for c in merge_document(root, {"a": 2})] == []
