"""Values as scripts and people read them: plain JSON values, ISO-8601 times, spans
(`1m30s`), clock times and short ids."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from cronpilot.adapters.jsonvalue import key_text

_UNITS = (("d", 86400), ("h", 3600), ("m", 60), ("s", 1))


SIGNIFICANT_DIGITS = 10
"""Floats in machine-readable output keep this many significant digits: every figure a person
or a measurement gives, without the binary noise of arithmetic (`0.8130000000000001`)."""


def tidy(data: object) -> Any:
    """`data` as plain JSON values, as `json.loads(json.dumps(data, default=str))` would give
    (tuples as lists, enums as their values, anything else as its text, keys as strings), floats
    cut to `SIGNIFICANT_DIGITS`: the one rounding of every machine-readable answer, the CLI's
    `--json`/`--output` and the API's alike. A walk with its own stack, at any depth."""
    root: list[Any] = [data]
    pending: list[tuple[Any, Any]] = [(root, 0)]
    while pending:
        holder, key = pending.pop()
        item = holder[key]
        copy: Any
        if isinstance(item, dict):
            copy = {key_text(name): child for name, child in item.items()}
            pending.extend((copy, name) for name in copy)
        elif isinstance(item, list | tuple):
            copy = list(item)
            pending.extend((copy, index) for index in range(len(copy)))
        else:
            copy = _plain_scalar(item)
        holder[key] = copy
    return root[0]


def _plain_scalar(item: object) -> Any:
    if item is None or isinstance(item, bool):
        return item
    if isinstance(item, float):
        return float(f"{item:.{SIGNIFICANT_DIGITS}g}")
    if isinstance(item, int):
        return int(item)
    return str.__str__(item) if isinstance(item, str) else str(item)


SHORT_ID = 8
"""Characters of an id shown in tables (`short_id`): unique enough to read, and a prefix that
every command taking an id accepts."""


def short_id(full: str) -> str:
    return full[:SHORT_ID]


def iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None


def span(seconds: float) -> str:
    """`90` → `1m30s`: the two largest units, which is all a person reads."""
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms" if seconds > 0 else "0s"
    rest = round(seconds)
    parts = []
    for unit, size in _UNITS:
        amount, rest = divmod(rest, size)
        if amount:
            parts.append(f"{amount}{unit}")
    return "".join(parts[:2])


def relative(moment: datetime | None, now: datetime) -> str:
    """`in 5s` / `3m ago`, with the absolute UTC time beside it."""
    if moment is None:
        return "-"
    delta = (moment - now).total_seconds()
    when = "now" if abs(delta) < 1 else f"in {span(delta)}" if delta > 0 else f"{span(-delta)} ago"
    return f"{when} ({clock_time(moment, now)})"


def clock_time(moment: datetime, now: datetime) -> str:
    """UTC wall time, with the date only when it is not today's."""
    utc = moment.astimezone(UTC)
    today = utc.date() == now.astimezone(UTC).date()
    return f"{utc:%H:%M:%S}Z" if today else f"{utc:%Y-%m-%d %H:%M:%S}Z"
