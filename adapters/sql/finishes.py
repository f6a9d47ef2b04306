"""The fenced finish, group-committed: finishes that arrive while one transaction is being
written wait for the next one, and go in together.

A worker finishing hundreds of runs a second would otherwise pay a transaction of five round
trips per run. Here one transaction locks every endpoint of the batch, reads their running
runs, and writes all the runs and all the endpoints with one executemany each. Each finish is
still decided on its own: an item whose lease is no longer ours (or whose run is no longer
`running`) is left out and its caller gets `LeaseLost`, while the rest of the batch is
recorded, with the alerts its runs raise (`domain.alerts`: a batch that raises none, the common
case, writes nothing more for them). If the batch transaction fails as a whole (a deadlock with
another writer, a value one row cannot store), every item is tried again in a transaction of
its own, so the error reaches only the callers it belongs to.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import bindparam, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from cronpilot.adapters.sql.engine import Database
from cronpilot.adapters.sql.notifications_repo import add_notifications
from cronpilot.adapters.sql.rows import (
    PLANNING_COLUMNS,
    planned_from_row,
    run_values,
    save_endpoint_states,
)
from cronpilot.adapters.sql.tables import endpoints, runs
from cronpilot.domain.alerts import Notification, run_notifications
from cronpilot.domain.errors import CronpilotError, LeaseLost
from cronpilot.domain.model import Claim, Endpoint, Response, Run, RunStatus
from cronpilot.domain.transitions import after_finish, finished_run, started_run

logger = logging.getLogger(__name__)

MAX_BATCH = 200
"""The most finishes one transaction records."""

_FINISHED_COLUMNS = (
    "status",
    "started_at",
    "finished_at",
    "duration_ms",
    "status_code",
    "body",
    "body_absence",
    "size_bytes",
    "body_hash",
    "error_kind",
    "error_message",
    "attempt",
    "attempts",
)
"""The run columns `finished_run` changes."""


@dataclass(slots=True)
class Finish:
    """One finish to record: what `ClaimRepository.finish` is given, and where its caller waits
    for the outcome."""

    claim: Claim
    worker_id: str
    response: Response
    now: datetime
    outcome: asyncio.Future[Run] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


async def record_finishes(conn: AsyncConnection, batch: Sequence[Finish]) -> list[Run | None]:
    """Record each finish whose claim still holds its lease (its endpoint's lease owner is the
    claim's worker and the claim's run is still `running`); None for the others, which write
    nothing. The endpoints are locked in id order, so two batches cannot deadlock each other.

    Only what the fence and re-planning need is read: the claim already holds the rest of the
    endpoint, and its run is the one `started_run` made from it (`started_at` aside)."""
    endpoint_ids = sorted({item.claim.endpoint.id for item in batch})
    locked = await conn.execute(
        select(*PLANNING_COLUMNS)
        .where(endpoints.c.id.in_(endpoint_ids))
        .order_by(endpoints.c.id)
        .with_for_update()
    )
    rows = {row["id"]: row for row in locked.mappings()}
    running = await conn.execute(
        select(runs.c.id, runs.c.started_at).where(
            runs.c.id.in_([item.claim.run_id for item in batch]),
            runs.c.status == RunStatus.RUNNING.value,
        )
    )
    started = dict(running.all())

    by_id: dict[str, Endpoint] = {}
    recorded: list[Run | None] = []
    raised: list[Notification] = []
    for item in batch:
        claim = item.claim
        row = rows.get(claim.endpoint.id)
        endpoint = by_id.get(claim.endpoint.id)
        if endpoint is None and row is not None:
            endpoint = planned_from_row(row, claim.endpoint)
        started_at = started.get(claim.run_id)
        if endpoint is None or endpoint.lease_owner != item.worker_id or started_at is None:
            recorded.append(None)
            continue
        running_run = started_run(claim, item.worker_id, started_at)
        run = finished_run(running_run, item.response, item.now)
        recorded.append(run)
        # Kept for later items of the batch: a second claim on this endpoint now finds the
        # lease released, as it would in a transaction of its own.
        by_id[endpoint.id] = after_finish(endpoint, running_run, item.response, item.now)
        raised.extend(run_notifications(endpoint, by_id[endpoint.id], run, item.now))
    finished = [run for run in recorded if run is not None]
    if finished:
        await conn.execute(
            update(runs).where(runs.c.id == bindparam("b_id")),
            [{"b_id": run.id, **_finished_values(run)} for run in finished],
        )
        ended = {run.endpoint_id for run in finished}
        await save_endpoint_states(conn, [by_id[endpoint_id] for endpoint_id in sorted(ended)])
    await add_notifications(conn, raised)
    return recorded


def _finished_values(run: Run) -> dict[str, object]:
    values = run_values(run)
    return {name: values[name] for name in _FINISHED_COLUMNS}


class FinishBatcher:
    """Queues finishes and writes them in as few transactions as the store's pace allows: one
    flusher task at a time takes everything queued (up to `MAX_BATCH`) into one transaction,
    and whatever arrived meanwhile into the next. An idle store writes a lone finish at once."""

    def __init__(self, db: Database, max_batch: int = MAX_BATCH) -> None:
        self._db = db
        self._max_batch = max_batch
        self._queue: list[Finish] = []
        self._flusher: asyncio.Task[None] | None = None

    async def finish(self, claim: Claim, worker_id: str, response: Response, now: datetime) -> Run:
        item = Finish(claim, worker_id, response, now)
        self._queue.append(item)
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush())
        return await item.outcome

    async def _flush(self) -> None:
        batch: list[Finish] = []
        try:
            while self._queue:
                batch = self._queue[: self._max_batch]
                del self._queue[: self._max_batch]
                await self._record(batch)
        except Exception as error:
            # A bug rather than the store (whose errors `_record` hands out): every caller
            # waiting gets it, as each would have without batching.
            for item in [*batch, *self._queue]:
                _settle(item, error)
            self._queue.clear()
        finally:
            # Cancelled (the loop is closing): nobody may be left waiting for an answer.
            for item in [*batch, *self._queue]:
                item.outcome.cancel()

    async def _record(self, batch: list[Finish]) -> None:
        try:
            async with self._db.write() as conn:
                outcomes = await record_finishes(conn, batch)
        except CronpilotError as error:
            if len(batch) == 1:
                _settle(batch[0], error)
                return
            # One line, no traceback: each caller is handed its own error and reports it.
            logger.info(
                "a batch of %d finishes failed (%s: %s); recording them one by one",
                len(batch),
                type(error).__name__,
                error,
                extra={"action": "finish_batch_failed", "count": len(batch)},
            )
            await self._one_by_one(batch)
            return
        for item, outcome in zip(batch, outcomes, strict=True):
            _settle(item, outcome)

    async def _one_by_one(self, batch: Sequence[Finish]) -> None:
        for item in batch:
            try:
                async with self._db.write() as conn:
                    [outcome] = await record_finishes(conn, [item])
            except CronpilotError as error:
                _settle(item, error)
            else:
                _settle(item, outcome)


def _settle(item: Finish, outcome: Run | Exception | None) -> None:
    """Hand the caller its result: the run, `LeaseLost` for None, or the store's error. A
    caller that stopped waiting (cancelled) is skipped: its run is recorded all the same."""
    if item.outcome.done():
        return
    if isinstance(outcome, Run):
        item.outcome.set_result(outcome)
    elif outcome is None:
        item.outcome.set_exception(LeaseLost(item.claim.endpoint.id, item.worker_id))
    else:
        item.outcome.set_exception(outcome)
