"""`--since` / `--until` (CLI) and `?since=&until=` (API), read one way: an ISO 8601 time, or a
duration back from now (`2h`: two hours ago; `adapters.durations`)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from cronpilot.adapters.durations import parse_duration
from cronpilot.domain.errors import InvalidTimeRange
from cronpilot.domain.schedule.time_range import TimeRange

_NOT_A_TIME = "is neither an ISO time (2030-01-31T09:00:00Z) nor a duration back from now (2h)"


def time_range(since: str | None, until: str | None, now: datetime) -> TimeRange:
    """The window between the two bounds, each optional. Raises `InvalidTimeRange` for a
    bound that is not a time, or a window that ends before it begins."""
    return TimeRange(_moment("since", since, now), _moment("until", until, now))


def _moment(bound: str, text: str | None, now: datetime) -> datetime | None:
    if text is None:
        return None
    try:
        seconds = parse_duration(text)
    except ValueError:
        return _iso_time(bound, text)
    if seconds < 0:
        raise InvalidTimeRange(bound, text, "is a negative duration")
    try:
        return now - timedelta(seconds=seconds)
    except OverflowError:
        raise InvalidTimeRange(bound, text, "reaches back before the calendar begins") from None


def _iso_time(bound: str, text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise InvalidTimeRange(bound, text, _NOT_A_TIME) from None
    try:
        # A naive time is read in the local zone (TZ, else the system's), as a person at the
        # keyboard means it.
        return moment.astimezone(UTC)
    except (OverflowError, ValueError):
        raise InvalidTimeRange(bound, text, "is outside the calendar") from None
