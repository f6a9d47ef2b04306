"""The history's partitions on PostgreSQL (`adapters.sql.partitions`): a run of a day without
a partition is kept (DEFAULT) and moves into the day's partition when housekeeping makes it;
retention drops whole days and nothing else."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from sqlalchemy import text

from cronpilot.adapters.sql import SqlStore
from cronpilot.adapters.sql.engine import Database
from cronpilot.adapters.sql.partitions import create_ahead, drop_before, partition_name
from tests.contract.builders import T0, add_endpoint, run_once

pytestmark = pytest.mark.postgres


async def _placed(store: SqlStore) -> dict[str, str]:
    """Each history run's id, with the partition holding it."""
    async with store.engine.connect() as conn:
        rows = await conn.execute(text("SELECT id, tableoid::regclass::text FROM runs"))
        return {str(run_id): str(table) for run_id, table in rows}


async def test_a_day_made_later_takes_its_runs_from_the_default(
    pg_store: SqlStore, pg_database: Database
) -> None:
    # T0 is years ahead of the days the migration made: its runs go to the DEFAULT partition.
    await add_endpoint(pg_store, "j", "e", T0, every=3600)
    first = await run_once(pg_store, T0)
    assert await _placed(pg_store) == {first.id: "runs_default"}

    made = await create_ahead(pg_database, T0.date(), 2)

    assert made == [partition_name(T0.date()), partition_name(T0.date() + timedelta(days=1))]
    assert await _placed(pg_store) == {first.id: partition_name(T0.date())}
    second = await run_once(pg_store, T0 + timedelta(hours=1))
    assert (await _placed(pg_store))[second.id] == partition_name(T0.date())
    assert await create_ahead(pg_database, T0.date(), 2) == []
    listed = await pg_store.runs.list_runs(first.endpoint_id)
    assert [run.id for run in listed] == [second.id, first.id]


async def test_retention_drops_whole_days_before_the_cutoff_only(
    pg_store: SqlStore, pg_database: Database
) -> None:
    await drop_before(pg_database, T0.date())  # the days the migration made, years before T0
    await create_ahead(pg_database, T0.date(), 3)
    await add_endpoint(pg_store, "j", "e", T0, every=86_400)
    days = [await run_once(pg_store, T0 + timedelta(days=n)) for n in range(3)]
    async with pg_store.engine.connect() as conn:
        await conn.execute(text("ANALYZE runs"))

    dropped, estimated = await drop_before(pg_database, (T0 + timedelta(days=2)).date())

    assert dropped == 2
    assert estimated == 2
    assert await _placed(pg_store) == {days[2].id: partition_name(days[2].slot_at.date())}
    listed = await pg_store.runs.list_runs(days[0].endpoint_id)
    assert [run.id for run in listed] == [days[2].id]
    assert await drop_before(pg_database, (T0 + timedelta(days=2)).date()) == (0, 0)


async def test_housekeeping_rolls_the_history_on(pg_store: SqlStore) -> None:
    """`roll_history`: the week from today made, the days past retention dropped."""
    await add_endpoint(pg_store, "j", "e", T0, every=86_400)
    old = await run_once(pg_store, T0)
    await pg_store.runs.roll_history(T0.date(), T0.date())
    assert await _placed(pg_store) == {old.id: partition_name(T0.date())}

    later = T0.date() + timedelta(days=10)
    await pg_store.runs.roll_history(later, later - timedelta(days=1))

    assert await _placed(pg_store) == {}
    async with pg_store.engine.connect() as conn:
        names = await conn.execute(
            text("SELECT relname FROM pg_class WHERE relname LIKE 'runs_p%' ORDER BY relname")
        )
        held = [str(name) for name in names.scalars()]
    assert partition_name(T0.date()) not in held
    assert {partition_name(later + timedelta(days=n)) for n in range(7)} <= set(held)


async def test_workers_making_and_dropping_days_at_once_do_each_once(
    pg_database: Database,
) -> None:
    """Every worker's housekeeping rolls the history: at once, they neither fail nor repeat."""
    days = [T0.date() + timedelta(days=n) for n in range(3)]

    made = await asyncio.gather(*(create_ahead(pg_database, days[0], 3) for _ in range(3)))
    dropped = await asyncio.gather(*(drop_before(pg_database, days[-1]) for _ in range(3)))

    assert sorted(name for names in made for name in names) == [partition_name(d) for d in days]
    assert sum(count for count, _ in dropped) == 2 + 7  # and the migration's week, years before
