"""The answer headers through which an endpoint steers its own schedule, read into a `Steering`.

- `Retry-After` (RFC 9110 §10.2.3) on a 429 or 503: delta-seconds or an HTTP-date. A date in
  the past asks for no wait. The wait is cut to the global cap.
- `Cronpilot-Next-Run`: a duration (`30s`, `5m`, `1h30m`, or seconds) to call every so often,
  or an RFC 3339 time (`2030-01-07T12:30:00Z`) to call once then.

A value that is garbage, negative or absurd (further away than `ABSURD`) is ignored, with a
line saying why in `Steering.ignored`: an endpoint's answer never breaks its run. Whether the
endpoint may steer at all (`accept_hints`) is the domain's to decide (`domain.schedule.steering`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime

from cronpilot.adapters.durations import parse_duration
from cronpilot.domain.model import Steering

RETRY_AFTER = "Retry-After"
NEXT_RUN = "Cronpilot-Next-Run"
RETRY_AFTER_STATUSES = frozenset({429, 503})
ABSURD = timedelta(days=365)
"""A wait or a time further away than this is a mistake, not a request."""
_QUOTED = 40
"""The most characters of a header value that a reason repeats."""
_DELTA_SECONDS = re.compile(r"(-?)([0-9]+)")
_MAX_DIGITS = 10
"""Delta-seconds with more significant digits than this are absurd (`ABSURD` has 8), and are
refused before `int()`, which raises on more than 4,300 digits."""


def read_steering(
    status: int, headers: Mapping[str, str], now: datetime, cap_seconds: float
) -> Steering | None:
    """What the answer's headers ask, seen at `now` (for HTTP dates); None when it has no
    steering header (most answers)."""
    retry_after = headers.get(RETRY_AFTER) if status in RETRY_AFTER_STATUSES else None
    next_run = headers.get(NEXT_RUN)
    if retry_after is None and next_run is None:
        return None
    ignored: list[str] = []
    wait: float | None = None
    interval: float | None = None
    at: datetime | None = None
    if retry_after is not None:
        asked = _retry_after_seconds(retry_after, now)
        if isinstance(asked, str):
            ignored.append(f"{RETRY_AFTER} {_quoted(retry_after)} ignored: {asked}")
        else:
            wait = min(asked, cap_seconds)
    if next_run is not None:
        hint = _next_run(next_run)
        if isinstance(hint, str):
            ignored.append(f"{NEXT_RUN} {_quoted(next_run)} ignored: {hint}")
        elif isinstance(hint, datetime):
            at = hint
        else:
            interval = hint
    return Steering(
        retry_after_seconds=wait,
        next_run_interval_seconds=interval,
        next_run_at=at,
        ignored=tuple(ignored),
    )


def _retry_after_seconds(value: str, now: datetime) -> float | str:
    """The wait asked for, or why the value is ignored."""
    text = value.strip()
    if match := _DELTA_SECONDS.fullmatch(text):
        sign, digits = match.groups()
        significant = digits.lstrip("0")
        if sign and significant:
            return "negative"
        delta = int(significant or "0") if len(significant) <= _MAX_DIGITS else math.inf
        if delta > ABSURD.total_seconds():
            return f"more than {ABSURD.days} days"
        return float(delta)
    try:
        moment = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return "neither delta-seconds nor an HTTP date"
    if moment.tzinfo is None:
        # `-0000` ("no zone information"): HTTP dates are always GMT.
        moment = moment.replace(tzinfo=UTC)
    seconds = (moment - now).total_seconds()
    if seconds > ABSURD.total_seconds():
        return f"more than {ABSURD.days} days ahead"
    return max(seconds, 0.0)


def _next_run(value: str) -> float | datetime | str:
    """The interval or time asked for, or why the value is ignored."""
    text = value.strip()
    try:
        seconds = parse_duration(text)
    except ValueError:
        return _rfc3339(text)
    if seconds <= 0 or not math.isfinite(seconds):
        return "not a positive duration"
    if seconds > ABSURD.total_seconds():
        return f"more than {ABSURD.days} days"
    return seconds


def _rfc3339(text: str) -> datetime | str:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return "neither a duration (30s) nor an RFC 3339 time"
    if moment.tzinfo is None:
        return "an RFC 3339 time needs a UTC offset (Z or +01:00)"
    try:
        return moment.astimezone(UTC)
    except OverflowError:
        # 9999-12-31T23:59:59-01:00 parses, but in UTC it falls after year 9999.
        return "out of range in UTC"


def _quoted(value: str) -> str:
    """The value as a reason quotes it: cut, so that a long header cannot flood a log line."""
    if len(value) <= _QUOTED:
        return repr(value)
    return f"{value[:_QUOTED]!r}… ({len(value)} characters)"
