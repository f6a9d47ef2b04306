"""The history's partitions on PostgreSQL (`adapters.sql.partitions`): a run of a day without
a partition is kept (DEFAULT) and moves into the day's partition when housekeeping makes it;
retention drops whole days and nothing else."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from sqlalchemy import text

from cronpilot.adapters.sql import SqlStore, partitions
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


async def _waiting_on_a_lock(store: SqlStore, waiters: int) -> None:
    """Until `waiters` sessions wait for a lock (each step below must be queued, not racing)."""
    query = text("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'")
    async with asyncio.timeout(10):
        while True:
            async with store.engine.connect() as conn:
                if (await conn.execute(query)).scalar_one() >= waiters:
                    return
            await asyncio.sleep(0.01)


async def _run_row(store: SqlStore) -> str:
    """The history's one run, as JSON, with a new id and the slot an hour later."""
    async with store.engine.connect() as conn:
        found = await conn.execute(
            text(
                "SELECT (to_jsonb(r) || jsonb_build_object('id', md5(r.id), "
                "'slot_at', r.slot_at + interval '1 hour'))::text FROM runs r"
            )
        )
        return str(found.scalar_one())


_WRITE_RUN = text("INSERT INTO runs SELECT * FROM json_populate_record(NULL::runs, :row)")


async def test_a_run_written_while_its_day_is_made_lands_in_that_day(
    pg_store: SqlStore, pg_database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CI failure of stop 29: a finish routed to the DEFAULT partition while its day was
    being attached failed with "new row for relation runs_default violates partition
    constraint". Each step waits for the one before, so the interleaving is certain."""
    monkeypatch.setattr(partitions, "LOCK_TIMEOUT", "10s")
    await add_endpoint(pg_store, "j", "e", T0, every=3600)
    first = await run_once(pg_store, T0)
    row = await _run_row(pg_store)
    async with pg_store.engine.connect() as reader, pg_store.engine.connect() as writer:
        # A reader of the DEFAULT partition holds the day's attach back at its last step.
        await reader.execute(text("SELECT count(*) FROM runs_default"))
        making = asyncio.create_task(create_ahead(pg_database, T0.date(), 1))
        await _waiting_on_a_lock(pg_store, 1)
        writing = asyncio.create_task(writer.execute(_WRITE_RUN, {"row": row}))
        await _waiting_on_a_lock(pg_store, 2)
        await reader.rollback()
        assert await making == [partition_name(T0.date())]
        await writing
        await writer.commit()

    placed = await _placed(pg_store)
    assert set(placed.values()) == {partition_name(T0.date())}
    assert first.id in placed and len(placed) == 2


async def test_a_day_made_gives_way_to_a_worker_it_would_deadlock(
    pg_store: SqlStore, pg_database: Database
) -> None:
    """A worker's transaction that wrote its endpoint, then writes the history: the attach
    holds the history and waits for the endpoints, the worker waits for the history. The
    attach gives way before PostgreSQL's deadlock detector would abort either, and makes the
    day once the worker is done."""
    await add_endpoint(pg_store, "j", "e", T0, every=3600)
    await run_once(pg_store, T0)
    row = await _run_row(pg_store)
    async with pg_store.engine.connect() as worker:
        await worker.execute(text("UPDATE endpoints SET name = name"))
        making = asyncio.create_task(create_ahead(pg_database, T0.date(), 1))
        await _waiting_on_a_lock(pg_store, 1)
        await worker.execute(_WRITE_RUN, {"row": row})
        await worker.commit()

    assert await making == [partition_name(T0.date())]
    assert set((await _placed(pg_store)).values()) == {partition_name(T0.date())}
