"""The tests' hand-driven clock: the product's `ManualClock`, and ways to wait until the
workers on it are idle."""

from __future__ import annotations

from datetime import UTC, datetime

from cronpilot.adapters.manual_clock import ManualClock

DEFAULT_START = datetime(2030, 1, 7, 12, 0, tzinfo=UTC)


class FakeClock(ManualClock):
    """Time stands still until the test calls `advance`."""

    def __init__(self, start: datetime = DEFAULT_START) -> None:
        super().__init__(start)

    async def until_sleeping_until(self, deadline: datetime, sleepers: int = 1) -> None:
        """Wait until something (`sleepers` things, for timers that share a deadline) sleeps
        until exactly `deadline` (bound it with `asyncio.timeout`): the way to know a worker
        is idle, and until when."""
        while sum(until == deadline for until, _ in self._sleepers) < sleepers:
            self._changed.clear()
            await self._changed.wait()

    async def until_sleeping_within(self, earliest: datetime, latest: datetime) -> datetime:
        """Wait until something sleeps until a time in [earliest, latest] (bound it with
        `asyncio.timeout`), and return that time: for sleeps of a random length (jitter)."""
        while True:
            found = [until for until, _ in self._sleepers if earliest <= until <= latest]
            if found:
                return min(found)
            self._changed.clear()
            await self._changed.wait()
