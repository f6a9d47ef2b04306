"""Durations as people write them in jobs files and answer headers: seconds, or `250ms`,
`30s`, `5m`, `1h30m`, `1d`."""

from __future__ import annotations

import math
import re

from cronpilot.domain.runs.excerpt import excerpt

_DURATION = re.compile(r"(?:\d+(?:\.\d+)?(?:ms|s|m|h|d))+")
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(value: object) -> float:
    """Seconds from a number or a duration string; raises `ValueError` for anything else,
    infinities and NaN included."""
    seconds = _seconds(value)
    if seconds is None or not math.isfinite(seconds):
        raise ValueError(
            f"{excerpt(repr(value))} is not a duration (seconds, or e.g. '30s', '5m', '1h30m')"
        )
    return seconds


def _seconds(value: object) -> float | None:
    try:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):
            text = value.strip().replace(" ", "")
            if _DURATION.fullmatch(text):
                return sum(
                    float(amount) * _DURATION_UNITS[unit]
                    for amount, unit in _DURATION_PART.findall(text)
                )
            return float(text)
    except (ValueError, OverflowError):
        # OverflowError: an integer too large for a float.
        return None
    return None
