"""Provides edges: endpoint A provides for endpoint B when A's output fields can fill B's
inputs, matched by name, by alias or by nested path, and only with compatible types.

Coverage says how much of B a provider fills: `strict` every required input (placeholder),
`partial` some of them, `optional` none of them but some literal input (a query parameter or
body value B would otherwise send as written). Confidence multiplies how good each match is
(declared 1.0, name 1.0, nested path 0.8, alias 0.6) by how settled and how present the
output field is, averaged over the inputs filled and scaled by the share of required inputs
covered.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from domain.schema_inference import ShapeNode, schema_types
from domain.templates import InputField

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
ALIASES: tuple[frozenset[str], ...] = (
    frozenset({"id", "identifier", "key"}),
    frozenset({"since", "after", "cursor", "last_id", "from_id"}),
    frozenset({"count", "total", "records", "record_count"}),
    frozenset({"url", "uri", "link", "href"}),
    frozenset({"email", "mail", "email_address"}),
)
MATCH_SCORES = {"declared": 1.0, "name": 1.0, "path": 0.8, "alias": 0.6}
OPTIONAL_SCALE = 0.5


class Coverage(StrEnum):
    STRICT = "strict"
    PARTIAL = "partial"
    OPTIONAL = "optional"


@dataclass(frozen=True, slots=True)
class OutputField:
    path: tuple[str, ...]
    types: frozenset[str]
    presence: float
    """Share of the parent objects that had this field."""
    confidence: float


@dataclass(frozen=True, slots=True)
class FieldMatch:
    input: InputField
    output: OutputField
    how: str
    confidence: float


@dataclass(frozen=True, slots=True)
class ProvidesEdge:
    provider: str
    consumer: str
    coverage: Coverage
    confidence: float
    matches: tuple[FieldMatch, ...]


def normalized(name: str) -> str:
    return _CAMEL.sub("_", name).replace("-", "_").lower()


def output_fields(root: ShapeNode) -> list[OutputField]:
    """Every field reachable through objects (not into arrays), with its statistics."""
    return list(_fields(root, ()))


def _fields(node: ShapeNode, path: tuple[str, ...]) -> Iterator[OutputField]:
    objects = node.types.get("object", 0)
    for key, child in node.properties.items():
        here = (*path, key)
        yield OutputField(
            here, frozenset(schema_types(child)), child.seen / objects, child.confidence
        )
        yield from _fields(child, here)


def compatible(types: frozenset[str], accepts: frozenset[str]) -> bool:
    """Every type the field was seen with fits the input (an integer fits a number)."""
    widened = accepts | ({"integer"} if "number" in accepts else set())
    return bool(types) and types <= widened


def _how(item: InputField, provider: str, field: OutputField) -> str | None:
    if item.placeholder is not None and item.placeholder.upstream == provider:
        return "declared" if item.placeholder.path == field.path else None
    want = normalized(item.name)
    last = normalized(field.path[-1])
    if last == want:
        return "name"
    if len(field.path) > 1 and normalized("_".join(field.path[-2:])) == want:
        return "path"
    if any(want in group and last in group for group in ALIASES):
        return "alias"
    return None


def best_match(item: InputField, provider: str, fields: Sequence[OutputField]) -> FieldMatch | None:
    best: FieldMatch | None = None
    for field in fields:
        how = _how(item, provider, field)
        if how is None or not compatible(field.types, item.accepts):
            continue
        confidence = MATCH_SCORES[how] * field.confidence * field.presence
        if best is None or confidence > best.confidence:
            best = FieldMatch(item, field, how, confidence)
    return best


def provides(
    provider: str, outputs: ShapeNode, consumer: str, inputs: Sequence[InputField]
) -> ProvidesEdge | None:
    """The provides edge provider→consumer, or None when no input can be filled."""
    fields = output_fields(outputs)
    matches = [m for item in inputs if (m := best_match(item, provider, fields)) is not None]
    if not matches:
        return None
    required = [item for item in inputs if item.required]
    covered = sum(1 for m in matches if m.input.required)
    if required and covered == len(required):
        coverage, scale = Coverage.STRICT, 1.0
    elif covered:
        coverage, scale = Coverage.PARTIAL, covered / len(required)
    else:
        coverage, scale = Coverage.OPTIONAL, OPTIONAL_SCALE
    mean = sum(m.confidence for m in matches) / len(matches)
    return ProvidesEdge(provider, consumer, coverage, round(mean * scale, 3), tuple(matches))


def provides_edges(
    outputs: Mapping[str, ShapeNode], inputs: Mapping[str, Sequence[InputField]]
) -> list[ProvidesEdge]:
    """Every provides edge among the endpoints named in both maps (never to itself)."""
    edges = []
    for provider, shape in sorted(outputs.items()):
        for consumer, wanted in sorted(inputs.items()):
            if consumer != provider and (edge := provides(provider, shape, consumer, wanted)):
                edges.append(edge)
    return edges
