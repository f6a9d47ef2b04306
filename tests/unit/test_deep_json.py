"""JSON text at any depth: `dump_json` writes what `json.dumps` writes, and keeps writing where
`json.dumps` runs out of stack; a body nested deeper than `MAX_DEPTH` is not stored."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cronpilot.adapters.http.body import _decoded
from cronpilot.adapters.jsonvalue import MAX_DEPTH, dump_json, json_depth, parse_storable
from cronpilot.domain.model import BodyAbsence
from tests.support.deep_json import nested

SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=30,
)


@given(VALUES, st.sampled_from([None, 0, 2, 4]), st.booleans(), st.booleans())
def test_writes_what_json_dumps_writes(
    value: object, indent: int | None, sort_keys: bool, ensure_ascii: bool
) -> None:
    expected = json.dumps(
        value,
        indent=indent,
        sort_keys=sort_keys,
        ensure_ascii=ensure_ascii,
        separators=None if indent is not None else (",", ":"),
    )

    assert dump_json(value, indent=indent, sort_keys=sort_keys, ensure_ascii=ensure_ascii) == (
        expected
    )


def test_keys_that_are_not_strings_are_written_as_json_writes_them() -> None:
    value = {3: "a", 2.5: "b", False: "c", None: "d"}

    assert dump_json(value) == json.dumps(value, separators=(",", ":"))
    with pytest.raises(TypeError):
        dump_json({(1, 2): "a tuple key"})
    with pytest.raises(TypeError):
        dump_json({"a": {1, 2}})


@pytest.mark.parametrize("depth", [900, 5000])
def test_any_depth_is_written_where_json_dumps_gives_up(depth: int) -> None:
    body = nested(depth)
    with pytest.raises(RecursionError):
        json.dumps(nested(5000))

    text = dump_json(body)
    pretty = dump_json(body, indent=1)

    assert json_depth(body) == depth
    assert text.count("[") + text.count("{") == depth
    closing = "".join("]" if level % 2 else "}" for level in range(depth - 1))
    assert text.endswith('{"leaf":0.30000000000000004}' + closing)
    assert pretty.count("\n") == 2 * depth


def test_a_body_nested_deeper_than_the_bound_is_not_stored() -> None:
    at_bound, beyond = dump_json(nested(MAX_DEPTH)), dump_json(nested(MAX_DEPTH + 1))

    assert json_depth(parse_storable(at_bound)) == MAX_DEPTH
    with pytest.raises(ValueError, match=f"nested deeper than {MAX_DEPTH} levels"):
        parse_storable(beyond)
    # Brackets within strings only make the depth worth measuring.
    assert parse_storable(json.dumps({"text": "[" * 2 * MAX_DEPTH})) is not None


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 900, 5000])
def test_a_response_nested_too_deep_is_kept_as_unparsable(depth: int) -> None:
    stored = _decoded(dump_json(nested(depth)).encode())

    assert (stored.body, stored.absence) == (None, BodyAbsence.UNPARSABLE)
