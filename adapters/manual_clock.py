"""A hand-driven clock (`domain.ports.Clock`): for tests, and for `cronpilot planner eval`, whose
exams tell minutes of a story on a clock they move themselves."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

DEFAULT_START = datetime(2030, 1, 7, 12, 0, tzinfo=UTC)


class FakeClock:
    """Time stands still until the test calls `advance`: a `sleep` ends when the clock has been
    advanced past its deadline, never because real time passed."""

    def __init__(self, start: datetime = DEFAULT_START) -> None:
        self._now = start
        self._sleepers: list[tuple[datetime, asyncio.Future[None]]] = []
        self._changed = asyncio.Event()

    def now(self) -> datetime:
        return self._now

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        entry = (self._now + timedelta(seconds=seconds), asyncio.get_running_loop().create_future())
        self._sleepers.append(entry)
        self._changed.set()
        try:
            await entry[1]
        finally:
            if entry in self._sleepers:
                self._sleepers.remove(entry)
                self._changed.set()

    def advance(self, seconds: float) -> datetime:
        """Move time forward and wake every sleeper whose deadline has come; returns the new now.

        Woken sleepers are forgotten at once, so `until_sleeping_until` then waits for them to
        sleep again, i.e. for whatever they do on waking to be done."""
        self._now += timedelta(seconds=seconds)
        for entry in list(self._sleepers):
            deadline, wakeup = entry
            if deadline <= self._now:
                self._sleepers.remove(entry)
                if not wakeup.done():
                    wakeup.set_result(None)
        self._changed.set()
        return self._now

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
