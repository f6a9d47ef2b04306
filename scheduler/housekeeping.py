"""Housekeeping every worker does for the shared store: reap dead workers' runs, prune old runs.

Both are idempotent, so every worker may run them on its own timer (decision 0003): an
APScheduler 3 `AsyncIOScheduler` inside the worker's event loop, never a shared job store.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

from apscheduler.schedulers.asyncio import AsyncIOScheduler

from cronpilot.domain.errors import CronpilotError
from cronpilot.domain.outage import described
from cronpilot.domain.ports import Clock, Store

log = logging.getLogger(__name__)

DEFAULT_PRUNE_INTERVAL_SECONDS = 600.0
FIRST_PRUNE_AFTER = timedelta(minutes=1)
"""A starting worker prunes only after this (or its interval, if shorter): it is likely to face
the backlog of slots that fell due while no worker ran, and old runs can wait."""
STALE_WAIT = timedelta(days=1)
"""A DAG dependant still waiting for a parent after this long never will: its wait goes."""


class Housekeeping:
    def __init__(
        self,
        store: Store,
        clock: Clock,
        reaper_interval_seconds: float,
        retention_runs: int,
        prune_interval_seconds: float = DEFAULT_PRUNE_INTERVAL_SECONDS,
    ) -> None:
        self._store = store
        self._clock = clock
        self._reaper_interval = reaper_interval_seconds
        self._retention_runs = retention_runs
        self._prune_interval = prune_interval_seconds
        self._timer: AsyncIOScheduler | None = None
        self._running: set[asyncio.Task[object]] = set()

    async def reap_once(self) -> int:
        """Abandon runs whose lease expired (their worker died) and free their endpoints."""
        reaped = await self._store.claims.reap(self._clock.now())
        if reaped:
            log.warning(
                "reaped %d runs of dead workers",
                reaped,
                extra={"action": "reap", "count": reaped},
            )
        return reaped

    async def prune_once(self) -> int:
        """Keep the newest `retention_runs` finished runs of each endpoint, delete the rest; and
        drop DAG waits older than `STALE_WAIT`."""
        pruned = await self._store.runs.prune(self._retention_runs)
        if pruned:
            log.info("pruned %d old runs", pruned, extra={"action": "prune", "count": pruned})
        dropped = await self._store.dag.drop_stale_waits(self._clock.now() - STALE_WAIT)
        if dropped:
            log.warning(
                "dropped %d DAG waits whose parents never reported",
                dropped,
                extra={"action": "drop_stale_waits", "count": dropped},
            )
        return pruned

    def start(self) -> None:
        """Start the timers; call from inside the running event loop. The reaper runs at once
        first, so a restarted worker repairs what its predecessor left behind; the first prune
        waits (`FIRST_PRUNE_AFTER`). The timers keep wall time (they only pace the work); the
        store is always given the clock's `now`."""
        timer = AsyncIOScheduler(timezone=UTC)
        started = datetime.now(UTC)
        first_prune = min(FIRST_PRUNE_AFTER, timedelta(seconds=self._prune_interval))
        for job, seconds, first in (
            (self.reap_once, self._reaper_interval, started),
            (self.prune_once, self._prune_interval, started + first_prune),
        ):
            timer.add_job(
                self._tracked(job),
                "interval",
                seconds=seconds,
                id=job.__name__,
                name=job.__name__,
                next_run_time=first,
                coalesce=True,
                max_instances=1,
                misfire_grace_time=None,
            )
        timer.start()
        self._timer = timer

    async def stop(self) -> None:
        """Stop the timers and let a job in progress finish (it is short) instead of cutting
        a store transaction in half."""
        timer, self._timer = self._timer, None
        if timer is None:
            return
        timer.pause()
        await asyncio.gather(*self._running, return_exceptions=True)
        timer.shutdown(wait=False)
        # AsyncIOScheduler.shutdown is queued with call_soon; let it run before returning.
        await asyncio.sleep(0)

    def _tracked(self, job: Callable[[], Awaitable[int]]) -> Callable[[], Awaitable[None]]:
        async def tracked() -> None:
            task = asyncio.current_task()
            assert task is not None
            self._running.add(task)
            try:
                await job()
            except CronpilotError as error:
                # The timer would log it with a traceback, which says nothing about a store
                # that is down; the job runs again at its next turn.
                log.warning(
                    "%s failed (%s); trying again at its next turn",
                    job.__name__,
                    described(error),
                    extra={"action": "housekeeping_failed", "job": job.__name__},
                )
            finally:
                self._running.discard(task)

        return tracked
