"""Whether an endpoint answered something new: bodies are compared without the fields that
change on every call whatever happens, learnt (`volatile_fields`: clocks, request ids,
counters) or declared (`change_ignores`). `comparable_hash` is the one comparison of
`only_if_changed`, the built-in planner's change rates and the planner's tools (decision 0024).
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Iterator, Sequence

from cronpilot.domain.graph.field_paths import FieldPath, addressable, canonical, parse_field_path
from cronpilot.domain.graph.schema_inference import ShapeNode, volatile
from cronpilot.domain.model import JSON, Endpoint, Run


def volatile_fields(root: ShapeNode) -> tuple[str, ...]:
    """The canonical paths of the fields of a learnt schema that are `volatile`, in order.
    Fields below arrays are not watched, and a key a path cannot name is passed over."""
    return tuple(sorted(canonical(path) for path in _volatile(root, ())))


def _volatile(node: ShapeNode, at: FieldPath) -> Iterator[FieldPath]:
    for key, child in node.properties.items():
        if not addressable(key):
            continue
        path = (*at, key)
        if volatile(child):
            yield path
        else:
            yield from _volatile(child, path)


def ignored_fields(endpoint: Endpoint) -> tuple[FieldPath, ...]:
    """What a comparison of the endpoint's responses leaves out: its `change_ignores` and its
    learnt volatile fields."""
    return _parsed((*endpoint.spec.change_ignores, *endpoint.volatile_fields))


@functools.lru_cache(maxsize=1024)
def _parsed(paths: tuple[str, ...]) -> tuple[FieldPath, ...]:
    # Stored paths were checked when declared or learnt: parsing them cannot fail.
    return tuple(parse_field_path(path) for path in paths)


def comparable_hash(run: Run, ignored: Sequence[FieldPath]) -> str | None:
    """A digest of the run's body without the `ignored` fields: two runs answered the same
    when their digests are equal. With nothing to ignore, or no body kept, it is the body's
    own hash (None when none was read: whether it changed is unknown)."""
    if not ignored or run.body is None:
        return run.body_hash
    body = compared_part(run.body, ignored)
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def compared_part(body: JSON, ignored: Sequence[FieldPath]) -> JSON:
    """What of `body` a comparison looks at: the body without the `ignored` fields."""
    for path in ignored:
        body = _without(body, path)
    return body


def nothing_compared(endpoint: Endpoint, newest_first: Sequence[Run]) -> bool:
    """Whether the endpoint's newest kept body is an object left empty once its volatile and
    ignored fields are out: its answers then look the same whatever the source does (a
    version number that rises on almost every call is learnt as a counter), and "no change
    seen" would say nothing of it."""
    ignored = ignored_fields(endpoint)
    newest = next((run.body for run in newest_first if run.body is not None), None)
    return bool(ignored) and newest is not None and compared_part(newest, ignored) == {}


def _without(value: JSON, path: FieldPath) -> JSON:
    """`value` without the field at `path` (copied along the path only). A list element is
    replaced by null rather than removed, so that the positions after it keep their meaning."""
    step, rest = path[0], path[1:]
    if isinstance(value, dict) and str(step) in value:
        key = str(step)
        trimmed = dict(value)
        if rest:
            trimmed[key] = _without(value[key], rest)
        else:
            del trimmed[key]
        return trimmed
    if isinstance(value, list) and isinstance(step, int) and -len(value) <= step < len(value):
        elements = list(value)
        elements[step] = _without(value[step], rest) if rest else None
        return elements
    return value


VOLATILE_MARK = "x-volatile"
IGNORED_MARK = "x-change-ignored"


def marked_schema(schema: dict[str, JSON], endpoint: Endpoint) -> dict[str, JSON]:
    """`schema` (a learnt JSON Schema, changed in place) with `x-volatile: true` on the
    endpoint's volatile fields and `x-change-ignored: true` on its `change_ignores` that the
    schema describes."""
    for mark, paths in (
        (VOLATILE_MARK, endpoint.volatile_fields),
        (IGNORED_MARK, endpoint.spec.change_ignores),
    ):
        for path in _parsed(paths):
            node = _described(schema, path)
            if node is not None:
                node[mark] = True
    return schema


def _described(schema: dict[str, JSON], path: FieldPath) -> dict[str, JSON] | None:
    node = schema
    for step in path:
        inner = node.get("items") if isinstance(step, int) else node.get("properties", {}).get(step)
        if not isinstance(inner, dict):
            return None
        node = inner
    return node
