"""Where a run is kept: queued or running in `run_queue`, finished in the history `runs`
(decision 0047). Reads that may find either read `every_run`; writes go through here, which puts
each run where its status says.

A slot runs once: the queue's key refuses a second unfinished run of a slot, and a run is queued
only while the history has none of its slot (`queue_runs`). Should a finished run's slot be in the
history already (two runs of one slot queued by a race the checks cannot see), the history keeps
the first: the second leaves the queue unrecorded rather than fail every finish of its batch.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from sqlalchemy import ColumnElement, delete, exists, select, union_all, update
from sqlalchemy.ext.asyncio import AsyncConnection

from cronpilot.adapters.sql.rows import run_values
from cronpilot.adapters.sql.tables import endpoints, run_queue, runs
from cronpilot.adapters.sql.upsert import conflict_insert
from cronpilot.domain.model import Run

every_run = union_all(select(run_queue), select(runs)).subquery("every_run")
"""The queue and the history as one table (UNION ALL: both planners read each side by its own
indexes and push a query's conditions down into each)."""


def history_has_slot(endpoint_id: Any, slot_at: Any) -> Any:
    """Whether the history holds a run of this endpoint's slot (values or columns)."""
    return exists().where(runs.c.endpoint_id == endpoint_id, runs.c.slot_at == slot_at)


async def queue_runs(conn: AsyncConnection, unfinished: Sequence[Run]) -> list[Run]:
    """Queue these runs (queued or running), each unless its slot has a run already, in the
    queue or in the history; the runs queued."""
    queued: list[Run] = []
    for run in unfinished:
        taken = await conn.execute(select(history_has_slot(run.endpoint_id, run.slot_at)))
        if taken.scalar_one():
            continue
        result = await conn.execute(
            conflict_insert(conn.dialect.name, run_queue)
            .values(run_values(run))
            .on_conflict_do_nothing(index_elements=[run_queue.c.endpoint_id, run_queue.c.slot_at])
        )
        if result.rowcount:
            queued.append(run)
    return queued


async def record_skipped(conn: AsyncConnection, skipped: Sequence[Run]) -> None:
    """Write runs that never ran (`domain.schedule.overlap`) straight into the history, each unless
    its slot has a run already."""
    await conn.execute(
        conflict_insert(conn.dialect.name, runs)
        .values([run_values(run) for run in skipped])
        .on_conflict_do_nothing(index_elements=[runs.c.endpoint_id, runs.c.slot_at])
    )


async def save_run(conn: AsyncConnection, run: Run) -> None:
    """Write a queued or running run as it now is: kept in the queue while unfinished, moved
    to the history once finished."""
    if run.status.finished:
        await move_to_history(conn, [run])
    else:
        await conn.execute(
            update(run_queue).where(run_queue.c.id == run.id).values(run_values(run))
        )


async def move_to_history(
    conn: AsyncConnection,
    finished: Sequence[Run],
    columns: Collection[str] | None = None,
    still: ColumnElement[bool] | None = None,
) -> set[str]:
    """Move these finished runs out of the queue into the history, as they now are (only
    `columns` of them when given, the rest as the queue holds them), those whose queued row
    matches `still` when given; the ids of those moved."""
    if not finished:
        return set()
    by_id = {run.id: run for run in finished}
    if conn.dialect.name == "postgresql":
        # Inserting a run locks its endpoint's key (the foreign key): take the endpoints first,
        # in id order as every writer does, so as not to deadlock a claim starting one of them.
        endpoint_ids = sorted({run.endpoint_id for run in finished})
        await conn.execute(
            select(endpoints.c.id)
            .where(endpoints.c.id.in_(endpoint_ids))
            .order_by(endpoints.c.id)
            .with_for_update()
        )
    taken_ids = run_queue.c.id.in_(list(by_id))
    condition = taken_ids if still is None else taken_ids & still
    taken = await conn.execute(delete(run_queue).where(condition).returning(*run_queue.c))
    rows = []
    for row in taken.mappings():
        values = run_values(by_id[row["id"]])
        kept = values if columns is None else {name: values[name] for name in columns}
        rows.append({**row, **kept})
    await write_history(conn, rows)
    return {row["id"] for row in rows}


async def write_history(conn: AsyncConnection, rows: Sequence[dict[str, Any]]) -> None:
    """Insert finished runs' rows into the history, in one statement; a slot the history holds
    already keeps its run (module note)."""
    if rows:
        await conn.execute(
            conflict_insert(conn.dialect.name, runs).on_conflict_do_nothing(
                index_elements=[runs.c.endpoint_id, runs.c.slot_at]
            ),
            rows,
        )
