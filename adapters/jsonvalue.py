"""JSON that every store keeps alike: what PostgreSQL's JSONB accepts, checked before storing.

Python's `json` accepts more than JSONB does: NaN and Infinity (also as overflowing numbers
such as `1e400`), the NUL character and lone UTF-16 surrogates in strings. SQLite would store
them and PostgreSQL would refuse them, so the backends would disagree about one response; such
values are refused here, before any store sees them.
"""

from __future__ import annotations

import json
import math
import re

from cronpilot.domain.excerpt import excerpt
from cronpilot.domain.model import JSON

_UNSTORABLE_CHARACTER = re.compile("[\x00\ud800-\udfff]")


_SUSPECT = re.compile(r"\\u0000|\\u[dD][89a-fA-F]|[\ud800-\udfff]|[eE][+-]?\d{3}|\d{200}")
"""Text that may decode to something `check_storable` refuses: an escaped NUL or surrogate, a
lone surrogate, or a number large enough to overflow to infinity. Text without any of them
(nearly every body) decodes to storable JSON, so the walk over the decoded value is skipped
(raw control characters and NaN are refused by the decoder itself)."""


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)
"""Made once: `json.loads` with any option builds a new decoder on every call."""


def parse_storable(raw: bytes | str) -> JSON:
    """Decode a JSON document strictly; raises ValueError (or RecursionError when nested too
    deep) for anything `check_storable` refuses."""
    # What `json.loads` does with bytes: UTF-8, -16 or -32, told apart by the first bytes.
    text = raw.decode(json.detect_encoding(raw), "surrogatepass") if isinstance(raw, bytes) else raw
    value = _DECODER.decode(text)
    if _SUSPECT.search(text) is not None:
        check_storable(value)
    return value


def check_storable(value: object) -> None:
    """Raise ValueError, naming the first offending path, unless `value` is plain JSON that
    every store keeps unchanged: dicts with string keys, lists, strings without NUL or lone
    surrogates, finite numbers, booleans and None."""
    pending: list[tuple[str, object]] = [("$", value)]
    while pending:
        path, item = pending.pop()
        if isinstance(item, dict):
            for key, child in item.items():
                if not isinstance(key, str):
                    raise ValueError(f"{path}: key {excerpt(repr(key))} is not a string")
                _check_text(f"{path} key", key)
                pending.append((f"{path}.{excerpt(key)}", child))
        elif isinstance(item, list):
            pending.extend((f"{path}[{index}]", child) for index, child in enumerate(item))
        elif isinstance(item, str):
            _check_text(path, item)
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise ValueError(f"{path}: {item} is not a JSON number")
        elif item is not None and not isinstance(item, bool | int):
            raise ValueError(f"{path}: {type(item).__name__} is not a JSON value")


def _check_text(path: str, text: str) -> None:
    found = _UNSTORABLE_CHARACTER.search(text)
    if found is not None:
        raise ValueError(f"{path}: contains U+{ord(found.group()):04X}, which JSONB refuses")
