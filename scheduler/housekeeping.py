"""Housekeeping every worker does for the shared store: reap dead workers' runs, expire approvals
nobody decided in time, prune old runs and the rows past their retention window
(`domain.runs.retention`), and forget workers long silent.

All are idempotent, so every worker may run them on its own timers (`runtime.timing`, on
the worker's clock; decision 0015), never from a shared job store.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Literal

from cronpilot.domain.errors import StoreUnavailable
from cronpilot.domain.log_extra import log_extra
from cronpilot.domain.ports.clock import Clock
from cronpilot.domain.ports.telemetry import Telemetry
from cronpilot.domain.ports.units import Repositories
from cronpilot.domain.runs.retention import PRUNE_BATCH, Retention, cutoffs
from cronpilot.domain.runs.telemetry import NO_TELEMETRY
from cronpilot.domain.runs.workers import seen_since
from cronpilot.runtime.timing import Periodic
from cronpilot.usecases.approvals import EXPIRY_BATCH, ApprovalDesk

log = logging.getLogger(__name__)

RetainedTable = Literal[
    "runs", "sessions", "proposals", "notifications", "audit", "approvals", "episodes"
]

FIRST_PRUNE_AFTER = timedelta(minutes=1)
"""A starting worker prunes only after this (or its interval, if shorter): it is likely to face
the backlog of slots that fell due while no worker ran, and old runs can wait."""
STALE_WAIT = timedelta(days=1)
"""A DAG dependant still waiting for a parent after this long never will: its wait goes."""


class Housekeeping:
    def __init__(
        self,
        store: Repositories,
        clock: Clock,
        reaper_interval_seconds: float,
        retention_runs: int,
        prune_interval_seconds: float,
        *,
        worker_stale_seconds: float,
        retention: Retention,
        approvals: ApprovalDesk,
        telemetry: Telemetry = NO_TELEMETRY,
    ) -> None:
        self._store = store
        self._telemetry = telemetry
        self._clock = clock
        self._retention_runs = retention_runs
        self._worker_stale_seconds = worker_stale_seconds
        self._retention = retention
        first_prune = min(FIRST_PRUNE_AFTER.total_seconds(), prune_interval_seconds)
        self._approvals = approvals
        self._timers = (
            Periodic("reap", clock, reaper_interval_seconds, self._reap),
            # As often as the reaper: an approval expires about as late as a dead worker's run.
            Periodic("expire_approvals", clock, reaper_interval_seconds, self._expire),
            Periodic("prune", clock, prune_interval_seconds, self._prune, first_after=first_prune),
        )

    async def reap_once(self) -> int:
        """Abandon runs whose lease expired (their worker died) and free their endpoints."""
        reaped = await self._store.claims.reap(self._clock.now())
        self._telemetry.reaped(reaped)
        if reaped:
            log.warning(
                "reaped %d runs of dead workers",
                reaped,
                extra=log_extra("reap", count=reaped),
            )
        return reaped

    async def expire_once(self) -> int:
        """Expire the approvals whose time is up (`ApprovalDesk.expire_lapsed`)."""
        return len(await self._approvals.expire_lapsed(self._clock.now()))

    async def prune_once(self) -> int:
        """Keep the newest `retention_runs` finished runs of each endpoint, delete the rest;
        delete the rows past their retention window (`prune_records`); drop DAG waits older
        than `STALE_WAIT`; forget workers silent for `worker_stale_seconds` (the registry).
        Returns how many runs were deleted."""
        pruned = await self._store.runs.prune(self._retention_runs)
        pruned += await self._roll_history()
        if pruned:
            log.info("pruned %d old runs", pruned, extra=log_extra("prune", count=pruned))
        await self.prune_records()
        dropped = await self._store.dag.drop_stale_waits(self._clock.now() - STALE_WAIT)
        if dropped:
            log.warning(
                "dropped %d DAG waits whose parents never reported",
                dropped,
                extra=log_extra("drop_stale_waits", count=dropped),
            )
        gone = await self._store.workers.prune(
            seen_since(self._clock.now(), self._worker_stale_seconds)
        )
        if gone:
            log.info(
                "forgot %d workers not heard from in %g s",
                gone,
                self._worker_stale_seconds,
                extra=log_extra("prune_workers", count=gone),
            )
        return pruned

    async def _roll_history(self) -> int:
        """Days of history made ahead and dropped past retention (PostgreSQL's partitions);
        a lock not had in time is left for the next pass."""
        now = self._clock.now()
        keep_from = cutoffs(self._retention, now).runs.date()
        try:
            return await self._store.runs.roll_history(now.date(), keep_from)
        except StoreUnavailable as error:
            log.warning(
                "history partitions not changed this pass: %s",
                error,
                extra=log_extra("roll_history_failed"),
            )
            return 0

    async def prune_records(self) -> dict[RetainedTable, int]:
        """Delete the sessions, decided proposals, delivered notifications (and ended alert
        episodes), audit entries and decided approvals past their retention window at this
        clock's now, a batch per transaction until none is left; returns how many went, by
        table. Idempotent: workers pruning at once delete each row once, and a batch found empty
        ends the table's turn."""
        cut = cutoffs(self._retention, self._clock.now())
        store = self._store
        batches: dict[RetainedTable, Callable[[int], Awaitable[int]]] = {
            "runs": lambda n: store.runs.prune_before(cut.runs, n),
            "sessions": lambda n: store.planner.prune_sessions(
                cut.sessions, cut.rule_evaluations, n
            ),
            "proposals": lambda n: store.planner.prune_proposals(cut.proposals, n),
            "notifications": lambda n: store.notifications.prune(cut.notifications, n),
            "audit": lambda n: store.access.prune_audit(cut.audit, n),
            "approvals": lambda n: store.approvals.prune(cut.approvals, n),
            # Ended alert episodes (`domain.runs.watch`) go with the notifications they raised.
            "episodes": lambda n: store.notifications.prune_episodes(cut.notifications, n),
        }
        gone: dict[RetainedTable, int] = {}
        for table, batch in batches.items():
            total = count = await batch(PRUNE_BATCH)
            while count == PRUNE_BATCH:
                count = await batch(PRUNE_BATCH)
                total += count
            gone[table] = total
            if total:
                log.info(
                    "pruned %d %s past their retention window",
                    total,
                    table,
                    extra=log_extra("prune_records", table=table, count=total),
                )
        return gone

    async def run(self, stop: asyncio.Event) -> None:
        """Run the timers until `stop` is set; a job in progress then finishes (it is short)
        rather than cut a store transaction in half. The reaper (and the expiry) runs at once
        first, so a restarted worker repairs what its predecessor left behind; the first prune
        waits (`FIRST_PRUNE_AFTER`, or its interval if shorter)."""
        async with asyncio.TaskGroup() as timers:
            for timer in self._timers:
                timers.create_task(timer.run(stop))

    async def _reap(self) -> bool:
        await self.reap_once()
        return False

    async def _expire(self) -> bool:
        return await self.expire_once() >= EXPIRY_BATCH

    async def _prune(self) -> bool:
        await self.prune_once()
        return False
