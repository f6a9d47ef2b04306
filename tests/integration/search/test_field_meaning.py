"""`graph suggest` by meaning with the bundled model: `customer_id` meets `client id`, shown
with its similarity and weighed below a match by name."""

from __future__ import annotations

import math

from cronpilot.adapters.search.embedders import WordLlamaEmbedder
from cronpilot.domain.graph.provides import (
    MEANING_THRESHOLD,
    differing_words,
    meaning_edges,
    provides,
)
from cronpilot.domain.graph.schema_inference import ShapeNode, merge_document
from cronpilot.domain.model import EndpointSpec, Schedule
from cronpilot.domain.runs.templates import input_fields


def _shape(document: dict[str, str]) -> ShapeNode:
    root = ShapeNode()
    for _ in range(6):
        merge_document(root, document)
    return root


def test_customer_id_meets_client_id_by_meaning_below_a_name_match() -> None:
    invoice = EndpointSpec(
        "invoice", "https://x.test/i?client_id=none", Schedule(interval_seconds=60)
    )
    wanted = {"invoice": input_fields(invoice)}
    pair = differing_words("customer_id", "client_id")
    assert pair is not None
    a, b = WordLlamaEmbedder().embed_now(list(pair))
    cosine = (
        sum(x * y for x, y in zip(a, b, strict=True))
        / math.dist(a, [0] * len(a))
        / (math.dist(b, [0] * len(b)))
    )

    [edge] = meaning_edges({"orders": _shape({"customer_id": "c1"})}, wanted, {pair: cosine})
    by_name = provides("orders", _shape({"client_id": "c1"}), "invoice", wanted["invoice"])

    assert cosine >= MEANING_THRESHOLD
    [match] = edge.matches
    assert (match.output.path, match.input.name, match.how) == (
        ("customer_id",),
        "client_id",
        "meaning",
    )
    assert match.similarity == round(cosine, 3)
    assert by_name is not None and edge.confidence < by_name.confidence
