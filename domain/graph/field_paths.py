"""Field paths: the one syntax that names a field of a response everywhere (decision 0023):
request templates (`{{ fetch.rows[0].id }}`), the planner's projections, and conditions (CEL,
whose own syntax it is).

Keys are joined by dots and list positions are written in brackets: `rows[0].id`. The dotted
position of the first templates (`rows.0.id`) is still read, as the same path; `canonical`
writes any path the one way, for messages that say how to write it. `[*]` (every element) is
for projections only. A key must be a plain name (letters, digits, `_`, `-`); other keys cannot
be named by a path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from cronpilot.domain.graph.schema_inference import MAX_DEPTH, ShapeNode
from cronpilot.domain.model import JSON

Step = str | int | None
"""A key, a list position, or None for every element (`[*]`)."""
FieldPath = tuple[Step, ...]

KEY = r"[A-Za-z0-9_-]+"
_STEP = re.compile(rf"\.?({KEY})|\[(\d+|\*)\]")
_KEY = re.compile(KEY)


def addressable(key: str) -> bool:
    """Whether a path can name `key` (an endpoint name, a response field's key)."""
    return _KEY.fullmatch(key) is not None


class FieldPathError(ValueError):
    """A path that cannot be read; its message says how to write it."""


def parse_field_path(text: str, *, every: bool = False) -> FieldPath:
    """`rows[0].id` (or `rows.0.id`) → `("rows", 0, "id")`; `[*]` → None where `every` allows
    it. Raises `FieldPathError`."""
    steps: list[Step] = []
    position = 0
    for match in _STEP.finditer(text):
        key, index = match.groups()
        dotted = match.group(0).startswith(".")
        if match.start() != position or (key is not None and dotted != bool(steps)):
            break
        if key is not None:
            steps.append(int(key) if key.isdigit() and steps else key)
        elif index == "*":
            if not every:
                raise FieldPathError(f"bad field path {text!r}: [*] is for projections only")
            steps.append(None)
        else:
            steps.append(int(index))
        position = match.end()
    if not steps or position != len(text) or isinstance(steps[0], int):
        raise FieldPathError(
            f"bad field path {text!r}: keys joined by dots, positions in brackets, e.g. rows[0].id"
        )
    return tuple(steps)


def canonical(path: FieldPath) -> str:
    """The path as written the one way: `rows[0].id`."""
    text = ""
    for step in path:
        if step is None:
            text += "[*]"
        elif isinstance(step, int):
            text += f"[{step}]"
        else:
            text += f".{step}" if text else step
    return text


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = _Missing()
"""What `follow` answers for a field the document does not have (a null value is None)."""


def follow(document: JSON, path: FieldPath) -> JSON | _Missing:
    """The value at `path` in `document`, or `MISSING`. A position also reads an object's key
    written with digits (`{"2024": …}`); a negative position counts from the end. `[*]` is not
    followed here (projections do it)."""
    value = document
    for step in path:
        if isinstance(value, list) and isinstance(step, int) and -len(value) <= step < len(value):
            value = value[step]
        elif isinstance(value, dict) and step is not None and str(step) in value:
            value = value[str(step)]
        else:
            return MISSING
    return value


@dataclass(frozen=True, slots=True)
class UnseenField:
    """A step of a path that a learnt output schema never saw."""

    key: str
    at: str
    """Where in the document it was looked for (`rows[0]`), or "" at the top."""
    known: tuple[str, ...]
    """The fields the schema did see there."""

    def phrase(self, owner: str) -> str:
        """`'fetch' has answered no field 'x' in rows[0] (its fields: a, b)`."""
        where = self.at or "its response"
        known = ", ".join(self.known) or "none"
        return f"{owner!r} has answered no field {self.key!r} in {where} (its fields: {known})"


def unseen_field(root: ShapeNode, path: FieldPath) -> UnseenField | None:
    """The first step of `path` that the schema `root` never saw, or None when it saw them all
    (or the path goes deeper than schemas describe, or through `[*]`)."""
    node = root
    for depth, step in enumerate(path):
        if depth >= MAX_DEPTH or step is None:
            return None
        if isinstance(step, int) and node.items is not None:
            node = node.items
        elif str(step) in node.properties:
            node = node.properties[str(step)]
        else:
            return UnseenField(str(step), canonical(path[:depth]), tuple(sorted(node.properties)))
    return None
