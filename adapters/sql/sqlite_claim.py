"""The statements of a claim on SQLite: lease and start in as few statements as SQLite allows.

PostgreSQL claims in one statement (`claims._claim_postgres_statement`): its CTEs lock, lease
and insert at once. SQLite has no data-modifying CTE, so leasing and starting are two
statements; it needs no `SKIP LOCKED` either, as its write transaction (begun IMMEDIATE) lets
no other claimer interleave. Two things keep the number of statements independent of the
number of runs claimed:

- `lease_returning`: one `UPDATE … RETURNING` leases the rows and returns them whole, with their
  job's columns and whether the history holds their slot already (what PostgreSQL's insert asks
  with the same `history_has_slot`), so no row is read again;
- `insert_runs`: the `running` runs the domain made of them (`started_run`) go in with one
  INSERT (SQLAlchemy sends an executemany with RETURNING as multi-row inserts), a slot that has
  an unfinished run already inserting nothing (ON CONFLICT on the queue's key).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from sqlalchemy import ColumnElement, Result, Update, func, literal_column, select, update
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncConnection

from cronpilot.adapters.sql.rows import job_columns, run_values
from cronpilot.adapters.sql.run_places import history_has_slot
from cronpilot.adapters.sql.tables import endpoints, jobs, run_queue
from cronpilot.domain.model import Run

SLOT_TAKEN = "slot_taken"
"""The column of `lease_returning` saying the history holds the row's slot already."""


def _updated(name: str) -> ColumnElement[Any]:
    """A column of the updated row of `endpoints`, named in full: SQLAlchemy writes SQLite's
    RETURNING columns unqualified, which in a subquery would name the subquery's own table."""
    return literal_column(f"endpoints.{name}")


def lease_returning(which: ColumnElement[bool], worker_id: str, until: Any) -> Update:
    """Lease the rows of `endpoints` that `which` picks to `worker_id` until `until`
    (`domain.runs.claiming.leased`), returning each whole with its job's columns (as
    `rows.select_endpoints` reads them) and `SLOT_TAKEN`."""
    of_job = [
        select(column.element)
        .where(jobs.c.id == _updated("job_id"))
        .scalar_subquery()
        .label(column.name)
        for column in job_columns()
    ]
    # `Endpoint.next_slot`: the slot the next run is recorded under.
    slot = func.coalesce(_updated("next_slot_at"), _updated("next_run_at"))
    return (
        update(endpoints)
        .where(which)
        .values(lease_owner=worker_id, lease_until=until)
        .returning(
            *endpoints.c,
            *of_job,
            history_has_slot(_updated("id"), slot).label(SLOT_TAKEN),
        )
    )


def mappings_of(result: Result[Any]) -> Sequence[Mapping[str, Any]]:
    """A result's rows by column name, as a claim's leased rows are held (`claims.Leased`)."""
    return cast(Sequence[Mapping[str, Any]], result.mappings().all())


async def insert_runs(conn: AsyncConnection, started: Sequence[Run]) -> set[str]:
    """Queue the `running` runs `started` in one INSERT; the ids of those inserted (a slot
    whose unfinished run is queued already inserts nothing)."""
    if not started:
        return set()
    statement = (
        sqlite_insert(run_queue)
        .on_conflict_do_nothing(index_elements=[run_queue.c.endpoint_id, run_queue.c.slot_at])
        .returning(run_queue.c.id)
    )
    result = await conn.execute(statement, [run_values(run) for run in started])
    return set(result.scalars())
