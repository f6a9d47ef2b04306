"""Request templates: placeholders, the input schema they make, filling, and the check
against an upstream's learnt schema."""

from __future__ import annotations

import pytest

from cronpilot.domain.errors import TemplateUnfilled
from cronpilot.domain.model import EndpointSpec, Schedule
from cronpilot.domain.runs.templates import (
    Placeholder,
    fill,
    first_mistake,
    input_fields,
    placeholders,
    template_mistake,
)

SPEC = EndpointSpec(
    name="load",
    url="https://x.io/batches/{{ fetch.batch.id }}?since={{fetch.last_id}}&mode=full",
    schedule=Schedule(),
    headers={"X-Run": "run {{ fetch.run }}"},
    body={"rows": "{{ fetch.rows }}", "note": "n={{ fetch.count }}", "limit": 5},
)
FETCHED = {"batch": {"id": "b/1"}, "last_id": 42, "run": "r1", "rows": [1, 2], "count": 2}


def test_placeholders_name_the_upstream_and_a_field_path_written_either_way() -> None:
    assert placeholders("{{ fetch.rows.0.id }} and {{a.b}} and {{ fetch.rows[0].id }}") == [
        Placeholder("fetch", ("rows", 0, "id")),
        Placeholder("a", ("b",)),
        Placeholder("fetch", ("rows", 0, "id")),
    ]
    # Messages show the one way of writing it.
    assert str(placeholders("{{fetch.rows.0.id}}")[0]) == "{{ fetch.rows[0].id }}"


@pytest.mark.parametrize(
    ("text", "quoted", "reason"),
    [
        ("{{ fetch }}", "{{ fetch }}", "names no field of 'fetch'"),
        ("x={{ fetch.batch id }}", "{{ fetch.batch id }}", "bad field path 'fetch.batch id'"),
        ("{{ .x }}", "{{ .x }}", "bad field path '.x'"),
        ("{{ fetch.rows[*].id }}", "{{ fetch.rows[*].id }}", "[*] is for projections only"),
        ("a/{{ fetch.id }/b", "{{ fetch.id }/b", "'{{' is not closed by '}}'"),
        ("a/{ fetch.id }}/b", "{ fetch.id }}", "'}}' is not opened by '{{'"),
        (
            "batch { fetch.batch_id } of {{ a.b }}",
            "{ fetch.batch_id }",
            "single braces are sent as text: write {{ fetch.batch_id }} for a placeholder",
        ),
        ("?since={fetch.rows[0].at}", "{fetch.rows[0].at}", "write {{ fetch.rows[0].at }}"),
        ("{{ a.b }} {{ fetch }}", "{{ fetch }}", "names no field of 'fetch'"),
    ],
)
def test_braces_that_make_no_placeholder_are_a_mistake_quoting_them(
    text: str, quoted: str, reason: str
) -> None:
    mistake = template_mistake(text)
    assert mistake is not None
    assert (mistake.text, reason in mistake.reason) == (quoted, True)


@pytest.mark.parametrize(
    "text",
    ["plain", '{"a":{"b":1}}', '{"a.b": 1}', "{}}", "{ x }", "{{ a.b }}", "{ 1.5 }", "{a. b}"],
)
def test_json_text_and_single_braces_are_no_mistake(text: str) -> None:
    assert template_mistake(text) is None


def test_the_first_mistake_of_a_request_says_where_it_is() -> None:
    spec = EndpointSpec(
        name="load",
        url="https://x.io/{{ fetch.id }}",
        schedule=Schedule(),
        headers={"X-Batch": "{{ fetch }}"},
        body={"rows": ["{{ fetch.id }", "ok"]},
    )
    assert first_mistake(spec) == ("headers.X-Batch", template_mistake("{{ fetch }}"))
    assert first_mistake(EndpointSpec("l", "https://x.io", Schedule(), body=spec.body)) == (
        "body.rows.0",
        template_mistake("{{ fetch.id }"),
    )
    assert first_mistake(EndpointSpec("l", spec.url, Schedule())) is None


def test_a_mistake_stored_before_it_was_refused_is_never_sent_as_text() -> None:
    spec = EndpointSpec(name="load", url="https://x.io/?b={{ fetch }}", schedule=Schedule())
    with pytest.raises(TemplateUnfilled, match=r"template \{\{ fetch \}\}: names no field"):
        fill(spec, {"fetch": FETCHED})
    assert placeholders(spec.url) == []


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


def test_fill_reads_list_positions_written_either_way() -> None:
    spec = EndpointSpec(
        name="load",
        url="https://x.io/{{ fetch.rows.1 }}",
        schedule=Schedule(),
        body={"first": "{{ fetch.rows[0] }}", "n": "{{ fetch.rows[9] }}"},
    )
    with pytest.raises(
        TemplateUnfilled, match=r"\{\{ fetch.rows\[9\] \}\}: the response has no 'rows\[9\]'"
    ):
        fill(spec, {"fetch": FETCHED})
    filled = fill(spec, {"fetch": {"rows": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}})
    assert (filled.url, filled.body) == ("https://x.io/2", {"first": 1, "n": 10})
