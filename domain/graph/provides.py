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
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from cronpilot.domain.graph.field_paths import FieldPath
from cronpilot.domain.graph.schema_inference import ShapeNode, schema_types
from cronpilot.domain.runs.templates import InputField

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
ALIASES: tuple[frozenset[str], ...] = (
    frozenset({"id", "identifier", "key"}),
    frozenset({"since", "after", "cursor", "last_id", "from_id"}),
    frozenset({"count", "total", "records", "record_count"}),
    frozenset({"url", "uri", "link", "href"}),
    frozenset({"email", "mail", "email_address"}),
)
_ALIASED: dict[str, frozenset[str]] = {
    name: frozenset(alias for group in ALIASES if name in group for alias in group)
    for names in ALIASES
    for name in names
}
"""Each name's aliases: every name sharing a group with it (itself included)."""
MATCH_SCORES = {"declared": 1.0, "name": 1.0, "path": 0.8, "alias": 0.6, "meaning": 0.5}
"""A match by meaning scores at most half an exact one, times its similarity."""
OPTIONAL_SCALE = 0.5
MEANING_THRESHOLD = 0.28
"""The least similarity (cosine of the words the two names do not share, wordllama's bundled
model) for a match by meaning: `customer_id`/`client id` 0.30, `total`/`amount` 0.34,
`records`/`rows` 0.31 pass; `customer`/`order` 0.18, `customer`/`product` 0.22 do not."""


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
    similarity: float | None = None
    """For a match by meaning: how alike the names are."""


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
    if last in _ALIASED.get(want, frozenset()):
        return "alias"
    return None


@dataclass(frozen=True, slots=True)
class ProviderFields:
    """A provider's output fields, indexed by every name an input could match them by, so that
    an input tries its few candidates rather than every field of every provider of its job."""

    fields: tuple[OutputField, ...]
    by_name: Mapping[str, tuple[int, ...]]
    """Positions in `fields` by normalized last key and by normalized last two keys."""
    by_path: Mapping[FieldPath, tuple[int, ...]]
    """Positions in `fields` by path (an output field's path has keys only)."""

    def candidates(self, item: InputField, provider: str) -> list[OutputField]:
        """The fields `_how` could match to `item` (a superset), in `fields` order."""
        if item.placeholder is not None and item.placeholder.upstream == provider:
            positions: Iterable[int] = self.by_path.get(item.placeholder.path, ())
        else:
            want = normalized(item.name)
            names = _ALIASED.get(want, frozenset({want}))
            positions = {i for name in names for i in self.by_name.get(name, ())}
        return [self.fields[i] for i in sorted(positions)]


def indexed(fields: Sequence[OutputField]) -> ProviderFields:
    by_name: dict[str, list[int]] = {}
    by_path: dict[FieldPath, list[int]] = {}
    for i, field in enumerate(fields):
        by_path.setdefault(field.path, []).append(i)
        names = {normalized(field.path[-1]), normalized("_".join(field.path[-2:]))}
        for name in names:
            by_name.setdefault(name, []).append(i)
    return ProviderFields(
        tuple(fields),
        {name: tuple(found) for name, found in by_name.items()},
        {path: tuple(found) for path, found in by_path.items()},
    )


def best_match(item: InputField, provider: str, fields: ProviderFields) -> FieldMatch | None:
    best: FieldMatch | None = None
    for field in fields.candidates(item, provider):
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
    return _edge(provider, indexed(output_fields(outputs)), consumer, inputs)


def _edge(
    provider: str, fields: ProviderFields, consumer: str, inputs: Sequence[InputField]
) -> ProvidesEdge | None:
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
    edges: list[ProvidesEdge] = []
    # Only consumers with inputs can be provided for: in a large job of endpoints without
    # inputs, pairing every provider with every consumer was the whole cost.
    consumers = [(name, wanted) for name, wanted in sorted(inputs.items()) if wanted]
    if not consumers:
        return edges
    for provider, shape in sorted(outputs.items()):
        # Once per provider, not per pair: the fields do not depend on the consumer.
        fields = indexed(output_fields(shape))
        for consumer, wanted in consumers:
            if consumer != provider and (edge := _edge(provider, fields, consumer, wanted)):
                edges.append(edge)
    return edges


def differing_words(output: str, wanted: str) -> tuple[str, str] | None:
    """The words of an output field's name and of an input's name that the other lacks
    (`customer_id`, `client id` → `customer`, `client`); None when one name's words are all in
    the other (`id` and `customer_id` say too little to be compared)."""
    out = normalized(output).split("_")
    want = normalized(wanted).replace(" ", "_").split("_")
    only_out = [w for w in out if w and w not in want]
    only_want = [w for w in want if w and w not in out]
    if not only_out or not only_want:
        return None
    return " ".join(only_out), " ".join(only_want)


def meaning_edges(
    outputs: Mapping[str, ShapeNode],
    inputs: Mapping[str, Sequence[InputField]],
    similarity: Mapping[tuple[str, str], float],
    skip: Collection[tuple[str, str]] = (),
) -> list[ProvidesEdge]:
    """Provides edges whose fields match by meaning only: an input filled by the output field
    whose differing words (`differing_words`) are most alike, at least `MEANING_THRESHOLD`
    (`similarity` by those word pairs), with compatible types; not between the pairs `skip`
    (those matched by name already)."""
    edges: list[ProvidesEdge] = []
    for provider, shape in sorted(outputs.items()):
        fields = output_fields(shape)
        for consumer, wanted in sorted(inputs.items()):
            if consumer == provider or (provider, consumer) in skip or not wanted:
                continue
            matches = []
            for item in wanted:
                if item.placeholder is not None:
                    continue
                best: FieldMatch | None = None
                for field in fields:
                    pair = differing_words(field.path[-1], item.name)
                    alike = similarity.get(pair, 0.0) if pair else 0.0
                    if alike < MEANING_THRESHOLD or not compatible(field.types, item.accepts):
                        continue
                    score = MATCH_SCORES["meaning"] * alike * field.confidence * field.presence
                    if best is None or score > best.confidence:
                        best = FieldMatch(item, field, "meaning", score, round(alike, 3))
                if best is not None:
                    matches.append(best)
            if matches:
                mean = sum(m.confidence for m in matches) / len(matches)
                confidence = round(mean * OPTIONAL_SCALE, 3)
                edges.append(
                    ProvidesEdge(provider, consumer, Coverage.OPTIONAL, confidence, tuple(matches))
                )
    return edges
