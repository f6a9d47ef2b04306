"""Request templates: placeholders, the input schema they make, filling, and the check
against an upstream's learnt schema."""

from __future__ import annotations

import pytest

from cronpilot.domain.errors import TemplateUnfilled
from cronpilot.domain.model import EndpointSpec, Schedule
from cronpilot.domain.schema_inference import ShapeNode, merge_document
from cronpilot.domain.templates import Placeholder, fill, input_fields, missing_field, placeholders

SPEC = EndpointSpec(
    name="load",
    url="https://x.io/batches/{{ fetch.batch.id }}?since={{fetch.last_id}}&mode=full",
    schedule=Schedule(),
    headers={"X-Run": "run {{ fetch.run }}"},
    body={"rows": "{{ fetch.rows }}", "note": "n={{ fetch.count }}", "limit": 5},
)
FETCHED = {"batch": {"id": "b/1"}, "last_id": 42, "run": "r1", "rows": [1, 2], "count": 2}


def test_placeholders_name_the_upstream_and_a_path() -> None:
    assert placeholders("{{ fetch.rows.0.id }} and {{a.b}}") == [
        Placeholder("fetch", ("rows", "0", "id")),
        Placeholder("a", ("b",)),
    ]
    assert placeholders("{{ fetch }} {{ .x }} {fetch.x}") == []


def test_the_input_schema_lists_every_placeholder_and_literal_input() -> None:
    found = {(f.where, f.name, f.required) for f in input_fields(SPEC)}
    assert found == {
        ("url", "id", True),
        ("query.since", "since", True),
        ("query.mode", "mode", False),
        ("header.X-Run", "X-Run", True),
        ("body.rows", "rows", True),
        ("body.note", "note", True),
        ("body.limit", "limit", False),
    }
    rows = next(f for f in input_fields(SPEC) if f.where == "body.rows")
    assert "array" in rows.accepts
    note = next(f for f in input_fields(SPEC) if f.where == "body.note")
    assert "array" not in note.accepts


def test_fill_keeps_whole_values_typed_and_encodes_text_in_the_url() -> None:
    filled = fill(SPEC, {"fetch": FETCHED})
    assert filled.url == "https://x.io/batches/b%2F1?since=42&mode=full"
    assert filled.headers == {"X-Run": "run r1"}
    assert filled.body == {"rows": [1, 2], "note": "n=2", "limit": 5}


@pytest.mark.parametrize(
    ("upstream", "message"),
    [
        ({}, "template {{ fetch.batch.id }}: no response of 'fetch'"),
        ({"fetch": {**FETCHED, "batch": {}}}, "the response has no 'batch.id'"),
        ({"fetch": {**FETCHED, "last_id": None}}, "only a string, number or boolean fits"),
        ({"fetch": {**FETCHED, "run": {"a": 1}}}, "only a string, number or boolean fits"),
        ({"fetch": {**FETCHED, "run": "r1\r\nX-Admin: yes"}}, "the value holds a control char"),
    ],
)
def test_fill_names_the_placeholder_it_cannot_fill(
    upstream: dict[str, object], message: str
) -> None:
    with pytest.raises(TemplateUnfilled) as caught:
        fill(SPEC, upstream)
    assert message in str(caught.value)


def test_missing_field_checks_a_path_against_the_learnt_shape() -> None:
    root = ShapeNode()
    merge_document(root, {"batch_id": "b1", "rows": [{"id": 1}], "meta": {"n": 1}})
    assert missing_field(root, Placeholder("fetch", ("batch_id",))) is None
    assert missing_field(root, Placeholder("fetch", ("rows", "0", "id"))) is None
    assert missing_field(root, Placeholder("fetch", ("meta", "n"))) is None
    assert missing_field(root, Placeholder("fetch", ("batch",))) == (
        "template {{ fetch.batch }}: 'fetch' has answered no field 'batch' in its response "
        "(its fields: batch_id, meta, rows)"
    )
    assert "no field 'm' in meta" in str(missing_field(root, Placeholder("fetch", ("meta", "m"))))
