"""`RunRepository` over SQL: run history, newest first, and retention."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import UTC, date, datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Integer,
    Select,
    String,
    bindparam,
    delete,
    func,
    select,
    tuple_,
    update,
)
from sqlalchemy.ext.asyncio import AsyncConnection

from cronpilot.adapters.sql.engine import Database
from cronpilot.adapters.sql.keyset import after_cursor, in_window
from cronpilot.adapters.sql.partitions import create_ahead, drop_before
from cronpilot.adapters.sql.prefixes import read_by_id
from cronpilot.adapters.sql.recent_days import bounded, lower_bounds, newest_rows
from cronpilot.adapters.sql.rows import run_from_row
from cronpilot.adapters.sql.run_places import every_run, move_to_history
from cronpilot.adapters.sql.tables import endpoints, run_queue, runs
from cronpilot.domain.errors import RunNotFound
from cronpilot.domain.model import Run, RunStatus
from cronpilot.domain.paging import Cursor
from cronpilot.domain.ports import RunFilter, RunRepository
from cronpilot.domain.schedule.time_range import TimeRange

PRUNE_BATCH = 1_000
"""The most runs one retention transaction deletes."""
_ENDPOINTS_PER_PAGE = 100
_SIBLINGS = endpoints.alias("siblings")
"""One alias for every `newest_finished_slot`: an alias makes a proxy of each of the table's
columns the first time its columns are read, which a fresh alias per call did on every
planner pass (a twentieth of the CPU of ten simulated minutes of the examples)."""


def _newest_first_rank() -> Any:
    """1 for the newest slot of each endpoint's finished runs, 2 for the next, …"""
    return func.row_number().over(partition_by=runs.c.endpoint_id, order_by=runs.c.slot_at.desc())


@functools.cache
def _history_statement(from_since: bool) -> Select[Any]:
    """One endpoint's runs, newest first, from slot `since` when `from_since` (built once
    each: the schema learner reads with it after every run)."""
    query = (
        select(every_run)
        .where(every_run.c.endpoint_id == bindparam("endpoint_id"))
        .order_by(every_run.c.slot_at.desc())
        .limit(bindparam("limit", type_=Integer))
        .offset(bindparam("offset", type_=Integer))
    )
    return query.where(every_run.c.slot_at >= bindparam("since")) if from_since else query


def newest_finished_slot(job_id: ColumnElement[str]) -> Any:
    """The newest slot of the finished runs of the job `job_id` (all its endpoints), found
    endpoint by endpoint over the runs' history index rather than by a scan of every run."""
    # Correlated to the enclosing statement's `endpoints` when `job_id` is its column.
    job_endpoints = select(_SIBLINGS.c.id).where(_SIBLINGS.c.job_id == job_id).correlate(endpoints)
    return (
        select(func.max(runs.c.slot_at))
        .where(runs.c.endpoint_id.in_(job_endpoints))
        .scalar_subquery()
    )


async def _newest_finished(conn: AsyncConnection, endpoint_ids: list[str]) -> dict[str, datetime]:
    """The newest slot in the history of each of these endpoints that has one, recent days
    first (`recent_days`), wider only for the endpoints not found yet."""
    found: dict[str, datetime] = {}
    missing = endpoint_ids
    for since in lower_bounds():
        query = (
            select(runs.c.endpoint_id, func.max(runs.c.slot_at))
            .where(runs.c.endpoint_id.in_(missing))
            .group_by(runs.c.endpoint_id)
        )
        found |= dict((await conn.execute(bounded(query, runs.c.slot_at, since))).all())
        missing = [endpoint_id for endpoint_id in missing if endpoint_id not in found]
        if not missing:
            break
    return found


@functools.cache
def _newest_finished_statement() -> Select[Any]:
    return select(newest_finished_slot(bindparam("job_id", type_=String)))


class SqlRuns(RunRepository):
    def __init__(self, db: Database, prune_batch: int = PRUNE_BATCH) -> None:
        self._db = db
        self._prune_batch = prune_batch

    async def list_runs(
        self, endpoint_id: str, limit: int = 50, offset: int = 0, since: datetime | None = None
    ) -> list[Run]:
        parameters = {"endpoint_id": endpoint_id, "limit": limit, "offset": offset, "since": since}
        async with self._db.read() as conn:
            result = await conn.execute(_history_statement(since is not None), parameters)
            return [run_from_row(row) for row in result.mappings()]

    async def page_runs(
        self, where: RunFilter, limit: int, after: Cursor | None = None
    ) -> list[Run]:
        newest_first = [every_run.c.slot_at.desc(), every_run.c.id.desc()]
        if where.endpoint_id is not None:
            # One endpoint's slots are unique: its (endpoint, slot) key, read backwards, gives
            # the order without a sort of all the endpoint's runs.
            newest_first.pop()
        query = select(every_run).order_by(*newest_first)
        for column, value in (
            (every_run.c.job_id, where.job_id),
            (every_run.c.endpoint_id, where.endpoint_id),
            (every_run.c.status, where.status and where.status.value),
            (every_run.c.trigger, where.trigger and where.trigger.value),
        ):
            if value is not None:
                query = query.where(column == value)
        if where.job_ids is not None:
            query = query.where(every_run.c.job_id.in_(sorted(where.job_ids)))
        window = where.within or TimeRange()
        query = query.where(*in_window(every_run.c.slot_at, window))
        newest = [datetime.now(UTC)]
        if after is not None:
            query = query.where(after_cursor(every_run.c.slot_at, every_run.c.id, after))
            newest.append(after.at)
        if window.until is not None:
            newest.append(window.until)
        async with self._db.read() as conn:
            rows = await newest_rows(
                conn, query, every_run.c.slot_at, limit, newest=min(newest), oldest=window.since
            )
        return [run_from_row(row) for row in rows]

    async def get_run(self, run_id: str) -> Run:
        row = await read_by_id(self._db, every_run, "run", run_id, RunNotFound)
        return run_from_row(row)

    async def dag_run_runs(self, dag_run_id: str) -> list[Run]:
        found = every_run.c
        query = (
            select(every_run)
            .where((found.trace_id == dag_run_id) | (found.dag_run_id == dag_run_id))
            .order_by(found.started_at, found.id)
        )
        async with self._db.read() as conn:
            return [run_from_row(row) for row in (await conn.execute(query)).mappings()]

    async def ask_cancel(self, asked: Run, status: RunStatus) -> bool:
        # Compare and set: a claim starting the queued run, or a finish recording the running
        # one, at the same time leaves the status moved and this writes nothing.
        asked_values = {
            "status": asked.status.value,
            "finished_at": asked.finished_at,
            "error_message": asked.error_message,
            "cancel_requested_by": asked.cancel_requested_by,
        }
        async with self._db.write() as conn:
            if asked.status.finished:
                # A queued run cancelled: it leaves the queue for the history.
                unchanged = run_queue.c.status == status.value
                moved = await move_to_history(conn, [asked], asked_values.keys(), unchanged)
                return bool(moved)
            result = await conn.execute(
                update(run_queue)
                .where(run_queue.c.id == asked.id, run_queue.c.status == status.value)
                .values(asked_values)
            )
        return bool(result.rowcount)

    async def latest_runs(self, endpoint_ids: Sequence[str]) -> dict[str, Run]:
        if not endpoint_ids:
            return {}
        wanted = list(endpoint_ids)
        async with self._db.read() as conn:
            queued = (
                select(run_queue.c.endpoint_id, func.max(run_queue.c.slot_at))
                .where(run_queue.c.endpoint_id.in_(wanted))
                .group_by(run_queue.c.endpoint_id)
            )
            slots: dict[str, datetime] = dict((await conn.execute(queued)).all())
            for endpoint_id, slot in (await _newest_finished(conn, wanted)).items():
                slots[endpoint_id] = max(slots.get(endpoint_id, slot), slot)
            if not slots:
                return {}
            # The slots given as values too, so that PostgreSQL reads only their days.
            query = select(every_run).where(
                tuple_(every_run.c.endpoint_id, every_run.c.slot_at).in_(list(slots.items())),
                every_run.c.slot_at.in_(sorted(set(slots.values()))),
            )
            rows = (await conn.execute(query)).mappings().all()
        return {row["endpoint_id"]: run_from_row(row) for row in rows}

    async def prune(self, keep_per_endpoint: int) -> int:
        """Retention in many short transactions instead of one DELETE over the whole table,
        which would hold its locks (on SQLite the only write lock, so claims and finishes wait)
        for as long as it runs: endpoints a page at a time, at most `prune_batch` runs per
        transaction."""
        deleted = 0
        after = ""
        while page := await self._endpoint_page(after):
            after = page[-1]
            while True:
                count = await self._prune_some(page, keep_per_endpoint)
                deleted += count
                if count < self._prune_batch:
                    break
        return deleted

    async def _endpoint_page(self, after: str) -> list[str]:
        query = (
            select(endpoints.c.id)
            .where(endpoints.c.id > after)
            .order_by(endpoints.c.id)
            .limit(_ENDPOINTS_PER_PAGE)
        )
        async with self._db.read() as conn:
            return list((await conn.execute(query)).scalars())

    async def _prune_some(self, endpoint_ids: list[str], keep_per_endpoint: int) -> int:
        """Delete up to `prune_batch` of the runs that `prune` must delete among these
        endpoints' runs; ranks are counted afresh each time, so the newest stay."""
        finished = (
            select(runs.c.endpoint_id, runs.c.slot_at, _newest_first_rank().label("rank"))
            .where(runs.c.endpoint_id.in_(endpoint_ids))
            .subquery()
        )
        doomed = (
            select(finished.c.endpoint_id, finished.c.slot_at)
            .where(finished.c.rank > keep_per_endpoint)
            .limit(self._prune_batch)
        )
        key = tuple_(runs.c.endpoint_id, runs.c.slot_at)
        async with self._db.write() as conn:
            result = await conn.execute(delete(runs).where(key.in_(doomed)))
        return int(result.rowcount)

    async def prune_before(self, before: datetime, limit: int) -> int:
        # The outer condition too, so PostgreSQL reads only the days before `before`.
        old = runs.c.slot_at < before
        doomed = select(runs.c.id).where(old).order_by(runs.c.slot_at).limit(max(limit, 0))
        return await self._db.write_one(delete(runs).where(old, runs.c.id.in_(doomed)))

    async def roll_history(self, today: date, keep_from: date) -> int:
        if self._db.dialect != "postgresql":
            return 0
        await create_ahead(self._db, today)
        _, dropped = await drop_before(self._db, keep_from)
        return dropped

    async def slots_taken(self, endpoint_id: str, start: datetime, end: datetime) -> set[datetime]:
        query = select(every_run.c.slot_at).where(
            every_run.c.endpoint_id == endpoint_id, every_run.c.slot_at.between(start, end)
        )
        async with self._db.read() as conn:
            return set((await conn.execute(query)).scalars())

    async def newest_finished_slot(self, job_id: str) -> datetime | None:
        async with self._db.read() as conn:
            result = await conn.execute(_newest_finished_statement(), {"job_id": job_id})
            found: datetime | None = result.scalar_one()
        return found
