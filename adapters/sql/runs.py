"""`RunRepository` over SQL: run history, newest first, and retention."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import datetime
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
    update,
)

from cronpilot.adapters.sql.engine import Database
from cronpilot.adapters.sql.keyset import after_cursor, in_window
from cronpilot.adapters.sql.prefixes import read_by_id
from cronpilot.adapters.sql.rows import run_from_row
from cronpilot.adapters.sql.tables import endpoints, runs
from cronpilot.domain.errors import RunNotFound
from cronpilot.domain.model import Run, RunStatus
from cronpilot.domain.paging import Cursor
from cronpilot.domain.ports import RunFilter, RunRepository

PRUNE_BATCH = 1_000
"""The most runs one retention transaction deletes."""
_ENDPOINTS_PER_PAGE = 100
_UNFINISHED = [status.value for status in RunStatus if not status.finished]
_SIBLINGS = endpoints.alias("siblings")
"""One alias for every `newest_finished_slot`: an alias makes a proxy of each of the table's
columns the first time its columns are read, which a fresh alias per call did on every
planner pass (a twentieth of the CPU of ten simulated minutes of the examples)."""
"""Runs that retention never deletes: queued or under way."""


def _newest_first_rank() -> Any:
    """1 for the newest slot of each endpoint, 2 for the next, …"""
    return func.row_number().over(partition_by=runs.c.endpoint_id, order_by=runs.c.slot_at.desc())


@functools.cache
def _history_statement() -> Select[Any]:
    return (
        select(runs)
        .where(runs.c.endpoint_id == bindparam("endpoint_id"))
        .order_by(runs.c.slot_at.desc())
        .limit(bindparam("limit", type_=Integer))
        .offset(bindparam("offset", type_=Integer))
    )


def newest_finished_slot(job_id: ColumnElement[str]) -> Any:
    """The newest slot of the finished runs of the job `job_id` (all its endpoints), found
    endpoint by endpoint over the runs' history index rather than by a scan of every run."""
    # Correlated to the enclosing statement's `endpoints` when `job_id` is its column.
    job_endpoints = select(_SIBLINGS.c.id).where(_SIBLINGS.c.job_id == job_id).correlate(endpoints)
    return (
        select(func.max(runs.c.slot_at))
        .where(
            runs.c.endpoint_id.in_(job_endpoints),
            runs.c.status.notin_(_UNFINISHED),
        )
        .scalar_subquery()
    )


@functools.cache
def _newest_finished_statement() -> Select[Any]:
    return select(newest_finished_slot(bindparam("job_id", type_=String)))


class SqlRuns(RunRepository):
    def __init__(self, db: Database, prune_batch: int = PRUNE_BATCH) -> None:
        self._db = db
        self._prune_batch = prune_batch

    async def list_runs(self, endpoint_id: str, limit: int = 50, offset: int = 0) -> list[Run]:
        parameters = {"endpoint_id": endpoint_id, "limit": limit, "offset": offset}
        async with self._db.read() as conn:
            result = await conn.execute(_history_statement(), parameters)
            return [run_from_row(row) for row in result.mappings()]

    async def page_runs(
        self, where: RunFilter, limit: int, after: Cursor | None = None
    ) -> list[Run]:
        query = select(runs).order_by(runs.c.slot_at.desc(), runs.c.id.desc()).limit(limit)
        for column, value in (
            (runs.c.job_id, where.job_id),
            (runs.c.endpoint_id, where.endpoint_id),
            (runs.c.status, where.status and where.status.value),
            (runs.c.trigger, where.trigger and where.trigger.value),
        ):
            if value is not None:
                query = query.where(column == value)
        query = query.where(*in_window(runs.c.slot_at, where.within))
        if after is not None:
            query = query.where(after_cursor(runs.c.slot_at, runs.c.id, after))
        async with self._db.read() as conn:
            result = await conn.execute(query)
            return [run_from_row(row) for row in result.mappings()]

    async def get_run(self, run_id: str) -> Run:
        row = await read_by_id(self._db, runs, "run", run_id, RunNotFound)
        return run_from_row(row)

    async def dag_run_runs(self, dag_run_id: str) -> list[Run]:
        query = (
            select(runs)
            .where((runs.c.trace_id == dag_run_id) | (runs.c.dag_run_id == dag_run_id))
            .order_by(runs.c.started_at, runs.c.id)
        )
        async with self._db.read() as conn:
            return [run_from_row(row) for row in (await conn.execute(query)).mappings()]

    async def ask_cancel(self, asked: Run, status: RunStatus) -> bool:
        # Compare and set: a claim starting the queued run, or a finish recording the running
        # one, at the same time leaves the status moved and this writes nothing.
        async with self._db.write() as conn:
            result = await conn.execute(
                update(runs)
                .where(runs.c.id == asked.id, runs.c.status == status.value)
                .values(
                    status=asked.status.value,
                    finished_at=asked.finished_at,
                    error_message=asked.error_message,
                    cancel_requested_by=asked.cancel_requested_by,
                )
            )
        return bool(result.rowcount)

    async def latest_runs(self, endpoint_ids: Sequence[str]) -> dict[str, Run]:
        if not endpoint_ids:
            return {}
        ranked = (
            select(runs, _newest_first_rank().label("rank"))
            .where(runs.c.endpoint_id.in_(list(endpoint_ids)))
            .subquery()
        )
        query = select(*(ranked.c[c.name] for c in runs.c)).where(ranked.c.rank == 1)
        async with self._db.read() as conn:
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
            select(runs.c.id, _newest_first_rank().label("rank"))
            .where(runs.c.endpoint_id.in_(endpoint_ids), runs.c.status.notin_(_UNFINISHED))
            .subquery()
        )
        doomed = (
            select(finished.c.id)
            .where(finished.c.rank > keep_per_endpoint)
            .limit(self._prune_batch)
        )
        async with self._db.write() as conn:
            result = await conn.execute(delete(runs).where(runs.c.id.in_(doomed)))
        return int(result.rowcount)

    async def slots_taken(self, endpoint_id: str, start: datetime, end: datetime) -> set[datetime]:
        query = select(runs.c.slot_at).where(
            runs.c.endpoint_id == endpoint_id, runs.c.slot_at.between(start, end)
        )
        async with self._db.read() as conn:
            return set((await conn.execute(query)).scalars())

    async def newest_finished_slot(self, job_id: str) -> datetime | None:
        async with self._db.read() as conn:
            result = await conn.execute(_newest_finished_statement(), {"job_id": job_id})
            found: datetime | None = result.scalar_one()
        return found
