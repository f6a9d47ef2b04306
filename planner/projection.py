"""What a query tool shows of a stored body: only the fields asked for (JSON paths), and never
more than a size limit, with a marker saying what was cut."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

DEFAULT_MAX_BODY_CHARS = 2_000
_STEP = re.compile(r"([^.\[\]]+)|\[(\d+|\*)\]")
_MISSING = object()


def parse_path(path: str) -> list[str | int | None]:
    """`items[0].id` → `["items", 0, "id"]`; `[*]` (every element) is None. Raises ValueError."""
    steps: list[str | int | None] = []
    position = 0
    for match in _STEP.finditer(path):
        if match.start() != position and path[position : match.start()] != ".":
            raise ValueError(f"bad JSON path {path!r}")
        key, index = match.groups()
        steps.append(key if key is not None else None if index == "*" else int(index))
        position = match.end()
    if not steps or position != len(path):
        raise ValueError(f"bad JSON path {path!r}: use dots and [n], e.g. items[0].id")
    return steps


def _follow(value: Any, steps: Sequence[str | int | None]) -> Any:
    if not steps:
        return value
    step, rest = steps[0], steps[1:]
    if step is None:
        if not isinstance(value, list):
            return _MISSING
        found = [_follow(item, rest) for item in value]
        return [item for item in found if item is not _MISSING]
    if isinstance(step, int):
        if isinstance(value, list) and -len(value) <= step < len(value):
            return _follow(value[step], rest)
        return _MISSING
    if isinstance(value, dict) and step in value:
        return _follow(value[step], rest)
    return _MISSING


def project(body: Any, paths: Sequence[str]) -> dict[str, Any]:
    """`{path: value}` for each path found in `body`; paths not found are listed under
    `_missing`, so the model can tell a null value from an absent field."""
    found: dict[str, Any] = {}
    missing: list[str] = []
    for path in paths:
        value = _follow(body, parse_path(path))
        if value is _MISSING:
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
            "Ask for fields (JSON paths) to read less."
        ),
        "preview": text[:max_chars],
    }
