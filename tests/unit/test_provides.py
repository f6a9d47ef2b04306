"""Provides edges: by name, alias and nested path, only with compatible types, with coverage
and confidence; and the near-misses that must not make an edge."""

from __future__ import annotations

from typing import Any

from cronpilot.domain.graph.provides import (
    Coverage,
    differing_words,
    meaning_edges,
    provides,
    provides_edges,
)
from cronpilot.domain.graph.schema_inference import ShapeNode, merge_document
from cronpilot.domain.model import EndpointSpec, Schedule
from cronpilot.domain.runs.templates import input_fields


def _shape(*documents: Any) -> ShapeNode:
    root = ShapeNode()
    for document in documents:
        merge_document(root, document)
    return root


def _inputs(url: str = "https://x.io/t", body: Any = None) -> Any:
    return input_fields(EndpointSpec("t", url, Schedule(), body=body))


FETCH = _shape(*[{"batch_id": "b1", "last_id": 5, "meta": {"batch": {"id": 9}}}] * 6)


def test_a_declared_placeholder_covers_strictly_with_full_confidence_when_settled() -> None:
    edge = provides("fetch", FETCH, "t", _inputs("https://x.io/t?b={{ fetch.batch_id }}"))
    assert edge is not None
    assert edge.coverage is Coverage.STRICT
    [match] = edge.matches
    assert (match.how, match.output.path) == ("declared", ("batch_id",))
    assert edge.confidence == round(6 / 9, 3)


def test_name_alias_and_nested_path_match_literal_inputs_as_optional() -> None:
    edge = provides("fetch", FETCH, "t", _inputs(body={"batchId": "x", "cursor": 1, "q": 0}))
    assert edge is not None
    assert edge.coverage is Coverage.OPTIONAL
    assert {(m.input.name, m.how, m.output.path) for m in edge.matches} == {
        ("batchId", "name", ("batch_id",)),
        ("cursor", "alias", ("last_id",)),
    }
    only_nested = _shape({"meta": {"batch": {"id": 9}}})
    nested = provides("fetch", only_nested, "t", _inputs(body={"batch_id": 0}))
    assert nested is not None
    assert [(m.how, m.output.path) for m in nested.matches] == [("path", ("meta", "batch", "id"))]


def test_partial_coverage_when_only_some_required_inputs_are_filled() -> None:
    url = "https://x.io/t?b={{ fetch.batch_id }}&o={{ other.order_id }}"
    edge = provides("fetch", FETCH, "t", _inputs(url))
    assert edge is not None
    assert edge.coverage is Coverage.PARTIAL
    assert edge.confidence == round(6 / 9 / 2, 3)


def test_near_misses_make_no_edge() -> None:
    shape = _shape({"batch": "b1", "ids": [1], "tags": {"a": 1}, "maybe": None, "n": 1})
    merge_document(shape, {"batch": "b2", "ids": [2], "tags": {"a": 2}, "maybe": "x", "n": 2})
    near_misses = {
        "batch_id": "x",  # a similar name is not the same name
        "id": 0,  # `ids` is not `id`
        "tag": "x",
        "maybe": "x",  # sometimes null: cannot always fill a string
    }
    assert provides("src", shape, "t", _inputs(body=near_misses)) is None
    # An object cannot fill a URL, even under the right name.
    assert provides("src", shape, "t", _inputs("https://x.io/t?tags={{ other.tags }}")) is None
    # A number literal cannot take a string.
    assert provides("src", shape, "t", _inputs(body={"batch": 3})) is None
    # A declared placeholder naming a field the provider lacks does not match another one.
    assert provides("src", shape, "t", _inputs("https://x.io/{{ src.bach }}")) is None


def test_an_endpoint_never_provides_for_itself() -> None:
    inputs = {"fetch": _inputs(body={"batch_id": "x"}), "t": _inputs(body={"last_id": 1})}
    edges = provides_edges({"fetch": FETCH}, inputs)
    assert [(e.provider, e.consumer) for e in edges] == [("fetch", "t")]


def test_fields_match_by_meaning_below_a_name_match_with_their_similarity() -> None:
    orders = _shape(*[{"customer_id": "c1", "total": 3}] * 6)
    invoice = EndpointSpec(
        "invoice", "https://x.test/invoice?client_id=none&amount=0", Schedule(interval_seconds=60)
    )
    wanted = {"invoice": input_fields(invoice)}
    similar = {("customer", "client"): 0.30, ("total", "amount"): 0.20}

    [edge] = meaning_edges({"orders": orders}, wanted, similar)
    by_name = provides("orders", _shape(*[{"client_id": "c1"}] * 6), "invoice", wanted["invoice"])

    assert differing_words("customer_id", "client_id") == ("customer", "client")
    assert differing_words("id", "customer_id") is None
    assert (edge.provider, edge.consumer, edge.coverage) == ("orders", "invoice", Coverage.OPTIONAL)
    [match] = edge.matches
    assert (match.output.path, match.input.name, match.how) == (
        ("customer_id",),
        "client_id",
        "meaning",
    )
    assert match.similarity == 0.3
    assert by_name is not None and edge.confidence < by_name.confidence
    assert meaning_edges({"orders": orders}, wanted, similar, skip={("orders", "invoice")}) == []
