"""Group commit of finished runs: finishes that arrive while one batch is being written wait for
the next one, and go in together through the store's one recording path,
`ClaimRepository.finish_many` (runs, re-planning, alerts and DAG bookkeeping alike).

One flusher task at a time takes everything queued (up to `MAX_BATCH`) into one call, and
whatever arrived meanwhile into the next. An idle store writes a lone finish at once.
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
        self._flusher: asyncio.Task[None] | None = None

    async def record(self, finish: Finish) -> Recorded:
        """`finish` recorded; raises its error (`LeaseLost`, `SlotAlreadyRun`,
        `StoreUnavailable`…) as the store reported it."""
        outcome: asyncio.Future[Recorded] = asyncio.get_running_loop().create_future()
        self._queue.append(finish)
        self._waiting.append(outcome)
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush())
            self._flusher.add_done_callback(self._unstarted)
        return await outcome

    def _unstarted(self, flusher: asyncio.Task[None]) -> None:
        """A flusher cancelled before it began runs none of its code, `finally` included: its
        callers are told here, unless a later flusher has taken their finishes on."""
        if flusher.cancelled() and flusher is self._flusher:
            self._drop()

    async def _flush(self) -> None:
        waiting: list[asyncio.Future[Recorded]] = []
        try:
            while self._queue:
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
        finally:
            # Cancelled (the loop is closing): nobody may be left waiting for an answer, and
            # the finishes of callers told "cancelled" are dropped, not recorded by a later
            # flush (their leases lapse and the reaper takes the runs back).
            for future in waiting:
                future.cancel()
            self._drop()

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
