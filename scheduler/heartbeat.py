"""The heartbeat: a scheduler worker registers itself in the workers registry at start and
moves its `last_seen` on every `seconds`, on the worker's clock (`runtime.timing`)."""

from __future__ import annotations

import asyncio

from cronpilot.domain.ports.clock import Clock
from cronpilot.domain.ports.workers import WorkerRepository
from cronpilot.domain.runs.workers import WorkerInfo
from cronpilot.runtime.timing import Periodic


class Heartbeat:
    def __init__(
        self, workers: WorkerRepository, clock: Clock, me: WorkerInfo, seconds: float
    ) -> None:
        self._workers = workers
        self._clock = clock
        self._me = me
        self._timer = Periodic("heartbeat", clock, seconds, self._beat)

    async def beat_once(self) -> None:
        await self._workers.beat(self._me.seen(self._clock.now()))

    async def run(self, stop: asyncio.Event) -> None:
        """Beat until `stop` is set, the first beat at once. A store that cannot be reached is
        one warning per missed beat (`Periodic`)."""
        await self._timer.run(stop)

    async def _beat(self) -> bool:
        await self.beat_once()
        return False
