"""Group commit of finished runs: finishes that arrive while one batch is being written wait for
the next one, and go in together through the store's one recording path,
`ClaimRepository.finish_many` (runs, re-planning, alerts and DAG bookkeeping alike).

The recorder's `run(stop)`, a side task of the worker, takes everything queued (up to
`MAX_BATCH`) into one call, and whatever arrived meanwhile into the next. An idle store writes a
lone finish at once.
"""

from __future__ import annotations

import asyncio

from cronpilot.domain.errors import CronpilotError
from cronpilot.domain.model import Finish, Recorded
from cronpilot.domain.ports.claims import ClaimRepository

MAX_BATCH = 200
"""The most finishes one `finish_many` records."""


class Recorder:
    def __init__(self, claims: ClaimRepository, max_batch: int = MAX_BATCH) -> None:
        self._claims = claims
        self._max_batch = max_batch
        # Two lists in step rather than a pair per finish: one allocation fewer per run.
        self._queue: list[Finish] = []
        self._waiting: list[asyncio.Future[Recorded]] = []
        self._queued = asyncio.Event()

    async def record(self, finish: Finish) -> Recorded:
        """`finish` recorded (while `run` runs); raises its error (`LeaseLost`,
        `SlotAlreadyRun`, `StoreUnavailable`…) as the store reported it."""
        outcome: asyncio.Future[Recorded] = asyncio.get_running_loop().create_future()
        self._queue.append(finish)
        self._waiting.append(outcome)
        self._queued.set()
        return await outcome

    async def run(self, stop: asyncio.Event) -> None:
        """Record what is queued, batch after batch, until `stop` is set and nothing is left.
        Cancelled (the worker crashed, the loop is closing), it tells the callers still waiting
        "cancelled" and drops their finishes, never recorded later (their leases lapse and the
        reaper takes the runs back)."""
        stopped = asyncio.create_task(stop.wait())
        stopped.add_done_callback(lambda _: self._queued.set())
        try:
            while not (stop.is_set() and not self._queue):
                await self._queued.wait()
                await self._flush()
        finally:
            stopped.cancel()
            self._drop()

    async def _flush(self) -> None:
        waiting: list[asyncio.Future[Recorded]] = []
        try:
            while self._queue:
                self._queued.clear()
                size = self._max_batch
                batch, waiting = self._queue[:size], self._waiting[:size]
                del self._queue[:size], self._waiting[:size]
                try:
                    outcomes: list[Recorded | CronpilotError] = await self._claims.finish_many(
                        batch
                    )
                except CronpilotError as error:
                    # The store failed the batch as a whole: each of its callers is told.
                    outcomes = [error] * len(batch)
                for future, outcome in zip(waiting, outcomes, strict=True):
                    _settle(future, outcome)
                waiting = []
        except Exception as error:
            # A bug: every caller waiting gets it, as each would have without batching.
            for future in [*waiting, *self._waiting]:
                _settle(future, error)
            self._drop()
        finally:
            # Cancelled: nobody may be left waiting for the batch under way (`run`).
            for future in waiting:
                future.cancel()

    def _drop(self) -> None:
        for future in self._waiting:
            future.cancel()
        self._queue.clear()
        self._waiting.clear()


def _settle(future: asyncio.Future[Recorded], outcome: Recorded | Exception) -> None:
    """Hand the caller its outcome; a caller that stopped waiting (cancelled) is skipped: its
    run is recorded all the same."""
    if future.done():
        return
    if isinstance(outcome, Recorded):
        future.set_result(outcome)
    else:
        future.set_exception(outcome)
