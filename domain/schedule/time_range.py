"""A window of time a list is narrowed to (`--since` / `--until`, `?since=&until=`): rows at or
after `since` and before `until`, either end open. Half-open, so that two windows that meet
share no row."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from cronpilot.domain.errors import InvalidTimeRange


@dataclass(frozen=True, slots=True)
class TimeRange:
    since: datetime | None = None
    until: datetime | None = None

    def __post_init__(self) -> None:
        if self.since is not None and self.until is not None and self.since >= self.until:
            raise InvalidTimeRange(
                "since", self.since.isoformat(), f"is not before until ({self.until.isoformat()})"
            )

    def holds(self, at: datetime) -> bool:
        return (self.since is None or at >= self.since) and (self.until is None or at < self.until)


EVER = TimeRange()
"""No bound at either end: what a list holds unless narrowed."""


def falls_in(window: TimeRange | None, at: datetime) -> bool:
    """Whether `at` is in `window`; anything is, when there is none."""
    return window is None or window.holds(at)
