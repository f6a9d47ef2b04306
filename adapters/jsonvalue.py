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

import orjson

from cronpilot.domain.model import JSON
from cronpilot.domain.runs.excerpt import excerpt

_UNSTORABLE_CHARACTER = re.compile("[\x00\ud800-\udfff]")


_SUSPECT = re.compile(r"\\u0000|\\u[dD][89a-fA-F]|[\ud800-\udfff]|[eE][+-]?\d{3}|\d{200}")
"""Text that may decode to something `check_storable` refuses: an escaped NUL or surrogate, a
lone surrogate, or a number large enough to overflow to infinity. Text without any of them
(nearly every body) decodes to storable JSON, so the walk over the decoded value is skipped
(raw control characters and NaN are refused by the decoder itself)."""


_ONLY_PYTHON_EXACT = re.compile(r"\\u0000|\d{19}")
"""Text `orjson` would decode differently from Python's `json`: an escaped NUL (which orjson
keeps and `check_storable` must refuse) or a digit run long enough to be an integer past 64
bits (which orjson turns into a float, losing digits). Everything else `orjson` refuses
exactly where `check_storable` would (lone surrogates, infinite numbers, NaN), and otherwise
decodes to the same value, several times faster (decision 0053)."""


MAX_DEPTH = 512
"""The deepest nesting a stored body may have. Every store encodes and decodes JSON with
Python's `json`, which calls itself once per level up to the recursion limit (about a thousand
levels, fewer the deeper its caller already is): a body accepted close to that limit could be
decoded by the worker that called, then not be written, or not be read back by a command or a
page that decodes it deeper in its stack. Below this bound every one of them has room."""


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)
"""Made once: `json.loads` with any option builds a new decoder on every call."""


def parse_storable(raw: bytes | str) -> JSON:
    """Decode a JSON document strictly; raises ValueError (or RecursionError when nested too
    deep to decode) for anything `check_storable` refuses and for one nested deeper than
    `MAX_DEPTH`."""
    # What `json.loads` does with bytes: UTF-8, -16 or -32, told apart by the first bytes.
    text = raw.decode(json.detect_encoding(raw), "surrogatepass") if isinstance(raw, bytes) else raw
    if _ONLY_PYTHON_EXACT.search(text) is None:
        value = orjson.loads(text)
    else:
        value = _DECODER.decode(text)
        if _SUSPECT.search(text) is not None:
            check_storable(value)
    # Counting the brackets is cheap; only a body with that many needs its depth measured.
    if text.count("[") + text.count("{") > MAX_DEPTH and json_depth(value) > MAX_DEPTH:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels")
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


_Pending = tuple[object, int, bool]
"""An item of `dump_json`'s work stack: a value to write at an indentation level, or (when
the flag is set) text to write as it is."""


def dump_json(
    value: object, *, indent: int | None = None, sort_keys: bool = False, ensure_ascii: bool = False
) -> str:
    """`value` (plain JSON: dicts, lists, tuples, strings, numbers, booleans, None) as JSON
    text, as `json.dumps` writes it with `indent`, or compact (`,` and `:`) without; however
    deeply it nests. `json.dumps` and every walk that calls itself per level fail past Python's
    recursion limit (about a thousand levels, fewer the deeper the caller already is), which a
    stored response body may reach: this one keeps its own stack. Raises TypeError for any
    other value, as `json.dumps` does."""
    key_separator = ": " if indent is not None else ":"
    out: list[str] = []
    pending: list[_Pending] = [(value, 0, False)]
    while pending:
        item, level, literal = pending.pop()
        if literal:
            out.append(str(item))
            continue
        members: list[tuple[str, object]]
        if isinstance(item, dict):
            pairs = sorted(item.items()) if sort_keys else item.items()
            members = [
                (json.dumps(key_text(key), ensure_ascii=ensure_ascii) + key_separator, child)
                for key, child in pairs
            ]
            opening, closing = "{", "}"
        elif isinstance(item, list | tuple):
            members = [("", child) for child in item]
            opening, closing = "[", "]"
        else:
            out.append(_json_scalar(item, ensure_ascii))
            continue
        if not members:
            out.append(opening + closing)
            continue
        inner, outer = _new_line(indent, level + 1), _new_line(indent, level)
        work: list[_Pending] = []
        for index, (prefix, child) in enumerate(members):
            work.append(((opening if index == 0 else ",") + inner + prefix, 0, True))
            work.append((child, level + 1, False))
        work.append((outer + closing, 0, True))
        pending.extend(reversed(work))
    return "".join(out)


def json_depth(value: object) -> int:
    """How many containers deep `value` nests (a scalar: 0), counted without recursion."""
    deepest = 0
    pending: list[tuple[object, int]] = [(value, 0)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict):
            pending.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list | tuple):
            pending.extend((child, depth + 1) for child in item)
        else:
            continue
        deepest = max(deepest, depth + 1)
    return deepest


def _new_line(indent: int | None, level: int) -> str:
    return "" if indent is None else "\n" + " " * (indent * level)


def key_text(key: object) -> str:
    """The text `json.dumps` writes for a dict key: a string as it is, a number, boolean or
    None as its JSON text. Raises TypeError for any other key, as `json.dumps` does."""
    if isinstance(key, str):
        return str.__str__(key)
    if key is None or isinstance(key, bool | int | float):
        return json.dumps(key)
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")


def _json_scalar(item: object, ensure_ascii: bool) -> str:
    if item is None or isinstance(item, str | bool | int | float):
        # One scalar: the C encoder, which cannot recurse here.
        return json.dumps(item, ensure_ascii=ensure_ascii)
    raise TypeError(f"Object of type {type(item).__name__} is not JSON serializable")
