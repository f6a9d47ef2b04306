"""What a query tool shows of a stored body: only the fields asked for (field paths, the one
syntax of templates and conditions), and never more than a size limit, with a marker saying
what was cut."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from cronpilot.domain.graph.field_paths import MISSING, FieldPath, follow, parse_field_path

DEFAULT_MAX_BODY_CHARS = 2_000


def _follow(value: Any, path: FieldPath) -> Any:
    """`field_paths.follow`, and `[*]`: the list of what follows from every element that has
    it."""
    if None not in path:
        return follow(value, path)
    every = path.index(None)
    elements = follow(value, path[:every])
    if not isinstance(elements, list):
        return MISSING
    found = [_follow(element, path[every + 1 :]) for element in elements]
    return [item for item in found if item is not MISSING]


def project(body: Any, paths: Sequence[str]) -> dict[str, Any]:
    """`{path: value}` for each path found in `body` (field paths, `domain.graph.field_paths`, with
    `[*]` for every element); paths not found are listed under `_missing`, so the model can
    tell a null value from an absent field. Raises `FieldPathError` (a `ValueError`) for a path
    it cannot read."""
    found: dict[str, Any] = {}
    missing: list[str] = []
    for path in paths:
        value = _follow(body, parse_field_path(path, every=True))
        if value is MISSING:
            missing.append(path)
        else:
            found[path] = value
    if missing:
        found["_missing"] = missing
    return found


def capped(value: Any, max_chars: int = DEFAULT_MAX_BODY_CHARS) -> Any:
    """`value`, or a marker with the start of its JSON text when that is longer than
    `max_chars`."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if len(text) <= max_chars:
        return value
    return {
        "_truncated": (
            f"body is {len(text)} characters; showing the first {max_chars}. "
            "Ask for fields (field paths) to read less."
        ),
        "preview": text[:max_chars],
    }
