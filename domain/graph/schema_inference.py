"""Output-schema inference: what an endpoint answers, learnt from every stored response.

A `ShapeNode` keeps counts for one place in the documents (the root, a property, array items):
how often it was seen, with which JSON types, which string formats held. `merge_document`
folds one more document in and says what changed shape (drift); `to_json_schema` turns the
counts into a JSON Schema that every document merged so far validates against (soundness,
property-tested with `jsonschema`):

- types widen (integer and number become number) and otherwise form a union;
- a property is `required` only while it was present in every object seen at its place: once
  missing, the count can never catch up, so it stays optional (memory without a flag);
- array items are merged from every element: the first `MAX_ITEMS_MERGED` of each array fully
  (they feed the counts), later ones only when they do not already fit, so one odd element in
  a long list still widens the schema while the cost stays bounded;
- below `MAX_DEPTH` only types are kept: deeper structure is accepted, not described;
- a format (date-time, uri, email, uuid) is stated only when every string seen matched it;
- a field outside arrays counts how often its value changed from one document to the next,
  and how often a number rose: a field that changes in almost every document and looks like a
  clock or an id is `volatile` (decision 0024), left out when responses are compared.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

JSON = Any

MAX_DEPTH = 8
MAX_ITEMS_MERGED = 50
CONFIDENCE_PRIOR = 3
VOLATILE_AFTER = 10
"""Values a field must have shown before it can be called volatile."""
VOLATILE_SHARE = 0.9
"""The share of those values that differed from the one before (and, for a number, rose)."""
MAX_WATCHED_CHARS = 64
"""Longer strings are not kept to compare with the next one (a clock or an id is shorter):
they count as changed."""
_CLOCK_OR_ID_FORMATS = frozenset({"date-time", "uuid"})
"""A field seen n times is trusted n / (n + CONFIDENCE_PRIOR): 0.5 after 3 sightings, 0.9
after 27. It says how settled the field's shape is, not whether it is present."""

_TYPES = ("null", "boolean", "integer", "number", "string", "array", "object")
_DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})")
_UUID = re.compile(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}")
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")


_SCALAR_TYPES: dict[type, str] = {
    type(None): "null",
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
}
_EXACT_TYPES: dict[type, str] = {**_SCALAR_TYPES, list: "array", dict: "object"}


def json_type(value: JSON) -> str:
    """The JSON Schema type of a decoded JSON value (bool before int: Python's bool is an int)."""
    # One dictionary look-up for what `json.loads` makes (every value of every document goes
    # through here); subclasses take the checks below.
    kind = _EXACT_TYPES.get(type(value))
    if kind is not None:
        return kind
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def string_formats(text: str) -> set[str]:
    """The formats `text` certainly has; strict, so that a stated format never lies."""
    found: set[str] = set()
    if _DATE_TIME.fullmatch(text):
        try:
            datetime.fromisoformat(text.replace("z", "Z"))
            found.add("date-time")
        except ValueError:
            pass
    if _UUID.fullmatch(text):
        found.add("uuid")
    if _EMAIL.fullmatch(text):
        found.add("email")
    # `urlsplit` is the dearest check. A URL's scheme ends with the first ':', and a netloc
    # needs '//': date-times (which have ':' too) are not parsed.
    if ":" in text and "/" in text and _is_http_url(text):
        found.add("uri")
    return found


def _is_http_url(text: str) -> bool:
    try:
        parts = urlsplit(text)
    except ValueError:
        # An unbalanced or invalid '[host]' (`http://[x`): not a URL, and a response holding
        # one must not stop the learner.
        return False
    return parts.scheme in ("http", "https") and bool(parts.netloc) and " " not in text


@dataclass
class ShapeNode:
    seen: int = 0
    types: dict[str, int] = field(default_factory=dict)
    formats: dict[str, int] = field(default_factory=dict)
    """Per format, how many of the strings seen here had it, counted while some format had
    held for every string: once none has, none can again, and strings are no longer checked."""
    properties: dict[str, ShapeNode] = field(default_factory=dict)
    items: ShapeNode | None = None
    watched: int = 0
    """Strings and numbers seen here, outside arrays, whose changes are counted."""
    changes: int = 0
    """How many of them differed from the one before."""
    rises: int = 0
    """How many numbers were greater than the number before (a counter, a Unix time)."""
    last: JSON = None
    """The last of them (None for a string over `MAX_WATCHED_CHARS`)."""
    path: str = field(default="", compare=False, repr=False)
    """Where the node is in the documents (`batch.id`, `items[]`), for drift messages. Not
    stored but given when the node is made: joining it for every value merged cost more than
    a tenth of the merge."""
    in_array: bool = field(default=False, compare=False, repr=False)
    """Below array items: its values come from several elements of one document, so whether
    they change from one document to the next is not counted."""

    @property
    def confidence(self) -> float:
        return self.seen / (self.seen + CONFIDENCE_PRIOR)

    def to_dict(self) -> dict[str, JSON]:
        data: dict[str, JSON] = {"seen": self.seen, "types": dict(self.types)}
        if self.formats:
            data["formats"] = dict(self.formats)
        if self.properties:
            data["properties"] = {k: v.to_dict() for k, v in self.properties.items()}
        if self.items is not None:
            data["items"] = self.items.to_dict()
        if self.watched:
            data["watched"] = [self.watched, self.changes, self.rises, self.last]
        return data

    @classmethod
    def from_dict(
        cls, data: dict[str, JSON], path: str = "", *, in_array: bool = False
    ) -> ShapeNode:
        items = data.get("items")
        properties = data.get("properties", {}).items()
        watched, changes, rises, last = data.get("watched", (0, 0, 0, None))
        return cls(
            seen=int(data["seen"]),
            types={str(k): int(v) for k, v in data["types"].items()},
            formats={str(k): int(v) for k, v in data.get("formats", {}).items()},
            properties={
                k: cls.from_dict(v, _join(path, k), in_array=in_array) for k, v in properties
            },
            items=None if items is None else cls.from_dict(items, f"{path}[]", in_array=True),
            watched=int(watched),
            changes=int(changes),
            rises=int(rises),
            last=last,
            path=path,
            in_array=in_array,
        )


@dataclass(frozen=True, slots=True)
class ShapeChange:
    """One way a document differed from the shape learnt so far."""

    path: str
    change: str
    """`new field`, `now optional`, `new type integer`, `format uuid dropped`."""

    def __str__(self) -> str:
        return f"{self.path or '$'}: {self.change}"


def merge_document(root: ShapeNode, document: JSON) -> list[ShapeChange]:
    """Fold `document` into `root` (in place); the changes of shape it caused, none for the
    first document."""
    changes: list[ShapeChange] = []
    _merge(root, document, 0, changes if root.seen else None)
    return changes


def _merge(node: ShapeNode, value: JSON, depth: int, changes: list[ShapeChange] | None) -> None:
    kind = _EXACT_TYPES.get(type(value)) or json_type(value)
    count = node.types.get(kind)
    if count is None:
        count = 0
        if changes is not None and node.seen:
            changes.append(ShapeChange(node.path, f"new type {kind}"))
    node.seen += 1
    node.types[kind] = count + 1
    if kind == "string":
        _merge_formats(node, value, count + 1, changes)
    elif depth < MAX_DEPTH:
        if kind == "object":
            _merge_object(node, value, depth, changes)
        elif kind == "array":
            _merge_array(node, value, depth, changes)


def _counted(node: ShapeNode, value: JSON) -> bool:
    """Count `value` at `node` if it is a scalar of a type already seen there and, for a
    string, no format is left to check: it can then change nothing but the counts (no drift,
    no format). Most values of a settled shape are such, and skip `_merge`'s checks."""
    kind = _SCALAR_TYPES.get(type(value))
    if kind is None:
        return False
    count = node.types.get(kind)
    # With no format counted, none held for every string, and none can again: `_merge_formats`
    # would return at once.
    if not count or (kind == "string" and node.formats):
        return False
    node.seen += 1
    node.types[kind] = count + 1
    return True


def _merge_formats(
    node: ShapeNode, text: str, strings: int, changes: list[ShapeChange] | None
) -> None:
    formats = node.formats
    if strings > 1 and max(formats.values(), default=0) < strings - 1:
        # Most string fields (names, codes, statuses) get here from their second string on:
        # no format can be stated or dropped any more, so the strings need not be parsed.
        return
    held = string_formats(text)
    for name in held:
        formats[name] = formats.get(name, 0) + 1
    if changes is not None and strings > 1:
        for name, count in formats.items():
            if name not in held and count == strings - 1:
                changes.append(ShapeChange(node.path, f"format {name} dropped"))


def _merge_object(
    node: ShapeNode,
    value: dict[str, JSON],
    depth: int,
    changes: list[ShapeChange] | None,
) -> None:
    properties = node.properties
    # The usual object has every field seen before: one set comparison instead of a look-up
    # per known field.
    if changes is not None and not properties.keys() <= value.keys():
        objects = node.types["object"]
        for key, known in properties.items():
            if key not in value and known.seen == objects - 1:
                changes.append(ShapeChange(known.path, "now optional"))
    depth += 1
    watch = not node.in_array
    for key, item in value.items():
        child = properties.get(key)
        if child is None:
            child = properties[key] = ShapeNode(path=_join(node.path, key), in_array=node.in_array)
            if changes is not None and node.types["object"] > 1:
                changes.append(ShapeChange(child.path, "new field"))
        if not _counted(child, item):
            _merge(child, item, depth, changes)
        if watch:
            _watch(child, item)


def _watch(node: ShapeNode, value: JSON) -> None:
    """Count whether `value`, a field's value in one more document, changed since the last."""
    kind = type(value)
    if kind is not str and kind is not int and kind is not float:
        return
    if kind is str and len(value) > MAX_WATCHED_CHARS:
        value = None
    if node.watched:
        last = node.last
        if value != last:
            node.changes += 1
            if kind is not str and type(last) in (int, float) and value > last:
                node.rises += 1
    node.watched += 1
    node.last = value


def _merge_array(
    node: ShapeNode, value: list[JSON], depth: int, changes: list[ShapeChange] | None
) -> None:
    items = node.items
    if items is None:
        items = node.items = ShapeNode(path=f"{node.path}[]", in_array=True)
    depth += 1
    for element in value[:MAX_ITEMS_MERGED]:
        if not _counted(items, element):
            _merge(items, element, depth, changes)
    for element in value[MAX_ITEMS_MERGED:]:
        if not fits(items, element, depth):
            _merge(items, element, depth, changes)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def fits(node: ShapeNode, value: JSON, depth: int = 0) -> bool:
    """Whether `value` already validates against `node`'s schema (nothing to learn from it)."""
    kind = json_type(value)
    if not _type_allowed(node, kind):
        return False
    if kind == "string":
        return all(name in string_formats(value) for name in _certain_formats(node))
    if depth >= MAX_DEPTH:
        return True
    if kind == "object":
        required = _required(node)
        if not required.issubset(value):
            return False
        return all(
            key in node.properties and fits(node.properties[key], item, depth + 1)
            for key, item in value.items()
        )
    if kind == "array":
        return node.items is not None and all(fits(node.items, e, depth + 1) for e in value)
    return True


def volatile(node: ShapeNode) -> bool:
    """Whether the field changed in almost every document (`VOLATILE_SHARE` of at least
    `VOLATILE_AFTER`) and looks like a clock or an id: date-time or uuid strings, or numbers
    that rose nearly every time (a counter, a Unix time). Only strings and numbers were seen
    there: a field that is sometimes null or an object is data, not a clock."""
    if node.watched < VOLATILE_AFTER or node.watched != node.seen:
        return False
    enough = VOLATILE_SHARE * (node.watched - 1)
    if node.changes < enough:
        return False
    if node.types.keys() == {"string"}:
        return not _CLOCK_OR_ID_FORMATS.isdisjoint(_certain_formats(node))
    return node.types.keys() <= {"integer", "number"} and node.rises >= enough


def _type_allowed(node: ShapeNode, kind: str) -> bool:
    return kind in node.types or (kind == "integer" and "number" in node.types)


def _certain_formats(node: ShapeNode) -> list[str]:
    strings = node.types.get("string", 0)
    return sorted(name for name, count in node.formats.items() if count == strings)


def _required(node: ShapeNode) -> set[str]:
    objects = node.types.get("object", 0)
    return {key for key, child in node.properties.items() if child.seen == objects}


def schema_types(node: ShapeNode) -> list[str]:
    """The node's types, integer folded into number when both were seen."""
    kinds = [kind for kind in _TYPES if kind in node.types]
    if "integer" in kinds and "number" in kinds:
        kinds.remove("integer")
    return kinds


def to_json_schema(node: ShapeNode, depth: int = 0) -> dict[str, JSON]:
    """The JSON Schema of everything merged into `node`, with `x-seen` counts and (on
    properties) `x-confidence`."""
    kinds = schema_types(node)
    schema: dict[str, JSON] = {"type": kinds[0] if len(kinds) == 1 else kinds}
    schema["x-seen"] = node.seen
    formats = _certain_formats(node)
    if "string" in kinds and formats:
        # The most specific format wins; every string seen had all of them anyway.
        schema["format"] = formats[0] if len(formats) == 1 else _most_specific(formats)
    if depth >= MAX_DEPTH:
        return schema
    if "object" in kinds:
        schema["properties"] = {
            key: {**to_json_schema(child, depth + 1), "x-confidence": round(child.confidence, 3)}
            for key, child in sorted(node.properties.items())
        }
        required = sorted(_required(node))
        if required:
            schema["required"] = required
    if "array" in kinds and node.items is not None and node.items.seen:
        schema["items"] = to_json_schema(node.items, depth + 1)
    return schema


def _most_specific(formats: list[str]) -> str:
    for name in ("uuid", "date-time", "email", "uri"):
        if name in formats:
            return name
    return formats[0]
