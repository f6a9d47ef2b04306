"""The fenced finish of a batch (`ClaimRepository.finish_many`): the worker group-commits its
finishes (`scheduler.recorder`), and each batch is written here in one transaction.

A worker finishing hundreds of runs a second would otherwise pay a transaction of five round
trips per run. Here one transaction locks every endpoint of the batch, reads their running
runs, moves all the runs from the queue to the history (`run_places.move_to_history`: one
DELETE … RETURNING, one insert) and writes all the endpoints with one executemany; a run whose
endpoint has dependants then reports to them in the same transaction (`dag_repo.advance_dag`).
Each finish is still decided on its own: an item whose lease is no longer ours (or whose run is
no longer `running`) is left out and its caller gets `LeaseLost`, while the rest of the batch is
recorded, with the alerts its runs raise (`domain.alerts.alerts`: a batch that raises none, the
common case, writes nothing more for them). If the batch transaction fails as a whole (a deadlock
with another writer, a value one row cannot store), every item is tried again in a transaction of
its own, so the error reaches only the callers it belongs to.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from cronpilot.adapters.sql.dag_repo import advance_dag, lock_jobs
from cronpilot.adapters.sql.engine import Database
from cronpilot.adapters.sql.finish_statement import FINISHED_COLUMNS, settled_alone, write_settled
from cronpilot.adapters.sql.notifications_repo import add_notifications
from cronpilot.adapters.sql.rows import (
    PLANNING_COLUMNS,
    planned_from_row,
    save_endpoint_states,
)
from cronpilot.adapters.sql.run_places import move_to_history, record_skipped
from cronpilot.adapters.sql.tables import endpoints, run_queue
from cronpilot.domain.errors import CronpilotError, LeaseLost
from cronpilot.domain.log_extra import log_extra
from cronpilot.domain.model import Endpoint, Finish, Recorded, RunStatus
from cronpilot.domain.ports import SecretCipher
from cronpilot.domain.runs.settling import Settled, settle_batch

logger = logging.getLogger(__name__)


async def record_finishes(conn: AsyncConnection, batch: Sequence[Finish]) -> list[Settled | None]:
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
        select(run_queue.c.id, run_queue.c.started_at).where(
            run_queue.c.id.in_([item.claim.run_id for item in batch]),
            run_queue.c.status == RunStatus.RUNNING.value,
        )
    )
    stored: dict[str, Endpoint] = {}
    for item in batch:
        row = rows.get(item.claim.endpoint.id)
        if row is not None and row["id"] not in stored:
            stored[row["id"]] = planned_from_row(row, item.claim.endpoint)
    settled = settle_batch(batch, stored, {row[0]: row[1] for row in running})
    await persist_settled(conn, [one for one in settled if one is not None])
    return settled


async def persist_settled(conn: AsyncConnection, settled: Sequence[Settled]) -> None:
    """Write what `settle_batch` decided: the runs, the endpoints (each once, as the last of its
    finishes left it) and the notifications."""
    if not settled:
        return
    await move_to_history(conn, [one.run for one in settled], FINISHED_COLUMNS)
    skipped = [run for one in settled for run in one.skipped]
    if skipped:
        await record_skipped(conn, skipped)
    ended = {one.endpoint.id: one.endpoint for one in settled}
    await save_endpoint_states(conn, [ended[endpoint_id] for endpoint_id in sorted(ended)])
    # Their targets are the row's, read sealed (`planned_from_row`): nothing to seal again.
    await add_notifications(conn, [n for one in settled for n in one.raised], None)


async def finish_many(
    db: Database, cipher: SecretCipher | None, batch: Sequence[Finish]
) -> list[Recorded | CronpilotError]:
    """Record `batch`: on PostgreSQL what one statement can take first (`finish_statement`),
    then the rest in one transaction that reads what it decides on (`finish_general`)."""
    written: dict[int, Recorded | CronpilotError] = {}
    if db.dialect == "postgresql":
        settled = settled_alone(batch)
        if settled:
            written = {
                n: Recorded(settled[n].run, []) for n in await _write_alone(db, batch, settled)
            }
    rest = [item for n, item in enumerate(batch) if n not in written]
    outcomes = iter(await finish_general(db, cipher, rest) if rest else [])
    return [written[n] if n in written else next(outcomes) for n in range(len(batch))]


async def _write_alone(
    db: Database, batch: Sequence[Finish], settled: dict[int, Settled]
) -> set[int]:
    """`write_settled`, or nothing when it fails: the general way then takes every finish, and
    reports the error to those it belongs to."""
    try:
        async with db.driver() as (_, driver):
            return await write_settled(driver, batch, settled)
    except CronpilotError as error:
        logger.info(
            "a statement of %d finishes failed (%s: %s); recording them the general way",
            len(settled),
            type(error).__name__,
            error,
            extra=log_extra("finish_statement_failed", count=len(settled)),
        )
        return set()


async def finish_general(
    db: Database, cipher: SecretCipher | None, batch: Sequence[Finish]
) -> list[Recorded | CronpilotError]:
    """Record `batch` in one transaction; if that fails as a whole, each finish in one of its
    own, so that the error reaches only the items it belongs to."""
    try:
        async with db.write() as conn:
            return await _record(conn, cipher, batch)
    except CronpilotError as error:
        if len(batch) == 1:
            return [error]
        # One line, no traceback: each caller is handed its own error and reports it.
        logger.info(
            "a batch of %d finishes failed (%s: %s); recording them one by one",
            len(batch),
            type(error).__name__,
            error,
            extra=log_extra("finish_batch_failed", count=len(batch)),
        )
    outcomes: list[Recorded | CronpilotError] = []
    for item in batch:
        try:
            async with db.write() as conn:
                outcomes += await _record(conn, cipher, [item])
        except CronpilotError as error:
            outcomes.append(error)
    return outcomes


async def _record(
    conn: AsyncConnection, cipher: SecretCipher | None, batch: Sequence[Finish]
) -> list[Recorded | CronpilotError]:
    upstream = {item.claim.endpoint.job_id for item in batch if item.claim.endpoint.spec.dependants}
    if upstream:
        # The DAG bookkeeping locks every endpoint of its jobs: take them all first, with those
        # of the batch, in one statement in id order as every writer does (no deadlock).
        await conn.execute(lock_jobs(upstream, [item.claim.endpoint.id for item in batch]))
    recorded: list[Recorded | CronpilotError] = []
    for item, one in zip(batch, await record_finishes(conn, batch), strict=True):
        if one is None:
            recorded.append(LeaseLost(item.claim.endpoint.id, item.worker_id))
        elif item.claim.endpoint.spec.dependants:
            advanced = await advance_dag(conn, cipher, item, one.run)
            recorded.append(replace(advanced, overlapped=len(one.skipped)))
        else:
            recorded.append(Recorded(one.run, [], overlapped=len(one.skipped)))
    return recorded
