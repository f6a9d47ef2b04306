"""`WorkerRepository` over SQL: the workers registry, one row per worker, upserted by its
heartbeat."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, select

from cronpilot.adapters.sql.engine import Database
from cronpilot.adapters.sql.tables import run_queue, runs, workers
from cronpilot.adapters.sql.upsert import conflict_insert
from cronpilot.domain.ports import WorkerRepository
from cronpilot.domain.runs.workers import WorkerActivity, WorkerInfo


def _values(worker: WorkerInfo) -> dict[str, Any]:
    return {
        "id": worker.id,
        "host": worker.host,
        "pid": worker.pid,
        "version": worker.version,
        "started_at": worker.started_at,
        "last_seen": worker.last_seen,
    }


class SqlWorkers(WorkerRepository):
    def __init__(self, db: Database) -> None:
        self._db = db

    async def beat(self, worker: WorkerInfo) -> None:
        values = _values(worker)
        statement = (
            conflict_insert(self._db.dialect, workers)
            .values(values)
            .on_conflict_do_update(
                index_elements=[workers.c.id],
                set_={name: value for name, value in values.items() if name != "id"},
            )
        )
        await self._db.write_one(statement)

    async def list_active(self, seen_since: datetime, runs_since: datetime) -> list[WorkerActivity]:
        # Correlated per worker, in the history over `ix_runs_worker`: a few index entries
        # each, never a scan of the runs; and in the (small) queue.
        recent = [
            select(func.count())
            .where(table.c.worker_id == workers.c.id, table.c.started_at >= runs_since)
            .correlate(workers)
            .scalar_subquery()
            for table in (runs, run_queue)
        ]
        query = (
            select(workers, (recent[0] + recent[1]).label("recent_runs"))
            .where(workers.c.last_seen >= seen_since)
            .order_by(workers.c.last_seen.desc(), workers.c.id)
        )
        async with self._db.read() as conn:
            rows = (await conn.execute(query)).mappings().all()
        return [
            WorkerActivity(
                WorkerInfo(
                    id=row["id"],
                    host=row["host"],
                    pid=row["pid"],
                    version=row["version"],
                    started_at=row["started_at"],
                    last_seen=row["last_seen"],
                ),
                row["recent_runs"],
            )
            for row in rows
        ]

    async def prune(self, seen_before: datetime) -> int:
        return await self._db.write_one(delete(workers).where(workers.c.last_seen < seen_before))
