"""A clock that moves only when told (`domain.ports.Clock`): `cronpilot planner eval` tells
minutes of a story in seconds on it, and the tests' fake clock builds on it."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta


class ManualClock:
    """Time stands still until `advance` moves it: a `sleep` ends when the clock has been
    advanced past its deadline, never because real time passed."""

    def __init__(self, start: datetime) -> None:
        self._now = start
        self._sleepers: list[tuple[datetime, asyncio.Future[None]]] = []
        self._changed = asyncio.Event()
        """Set whenever the sleepers change: what the tests' fake clock waits on."""

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

        Woken sleepers are forgotten at once: whoever watches the sleepers sees them only once
        they sleep again, i.e. once whatever they do on waking is done."""
        self._now += timedelta(seconds=seconds)
        for entry in list(self._sleepers):
            deadline, wakeup = entry
            if deadline <= self._now:
                self._sleepers.remove(entry)
                if not wakeup.done():
                    wakeup.set_result(None)
        self._changed.set()
        return self._now
