"""Read-only units on every store: one consistent state for all their reads, no write lock
held meanwhile (on SQL), and every write refused."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import update

from cronpilot.adapters.sql import open_sql_store
from cronpilot.adapters.sql.engine import Database
from cronpilot.adapters.sql.tables import endpoints
from cronpilot.domain.errors import ReadOnlyUnit
from cronpilot.domain.graph.graph import EdgeSighting, EdgeSource, EdgeType
from cronpilot.domain.model import Pause
from cronpilot.domain.ports import Store
from cronpilot.domain.runs.transitions import with_pause
from tests.contract.builders import T0, add_endpoint
from tests.support.memory_store import MemoryStore
from tests.support.scheduling import set_pause


async def test_a_reading_unit_sees_one_state_while_a_writer_commits(store: Store) -> None:
    endpoint_id = await add_endpoint(store, "j", "a", T0)
    async with store.reading() as tx:
        before = await tx.catalog.get_endpoint(endpoint_id)
        writer = asyncio.create_task(set_pause(store.catalog, endpoint_id, Pause("by hand"), T0))
        if not isinstance(store, MemoryStore):
            # SQL holds no write lock for a reading unit: the write commits meanwhile (SQLite
            # would make it wait, then fail, had the unit begun IMMEDIATE).
            await writer
            assert (await store.catalog.get_endpoint(endpoint_id)).pause is not None
        # The memory store's writer waits for the unit's lock; SQL reads the unit's snapshot.
        assert await tx.catalog.get_endpoint(endpoint_id) == before
        assert before.pause is None
    await writer
    async with store.reading() as tx:
        assert (await tx.catalog.get_endpoint(endpoint_id)).pause == Pause("by hand")


async def test_a_reading_unit_refuses_every_write(store: Store) -> None:
    endpoint_id = await add_endpoint(store, "j", "a", T0)
    sighting = EdgeSighting("j/a", "j/a", EdgeType.SEQUENCE, EdgeSource.INFERRED, True)
    async with store.reading() as tx:
        paused = with_pause(await tx.catalog.get_endpoint(endpoint_id), Pause("by hand"), T0)
        with pytest.raises(ReadOnlyUnit, match="read-only unit of work cannot write"):
            await tx.catalog.save_schedule(paused)
        with pytest.raises(ReadOnlyUnit):
            await tx.graph.record([sighting], T0)
        with pytest.raises(ReadOnlyUnit):
            await tx.runs.prune(0)
        with pytest.raises(ReadOnlyUnit):
            await tx.planner.expire_pending(T0)
        for prune in (
            tx.planner.prune_sessions(T0, T0, 10),
            tx.planner.prune_proposals(T0, 10),
            tx.notifications.prune(T0, 10),
            tx.access.prune_audit(T0, 10),
            tx.approvals.prune(T0, 10),
        ):
            with pytest.raises(ReadOnlyUnit):
                await prune
        # The unit still reads after a refusal.
        assert (await tx.catalog.get_endpoint(endpoint_id)).pause is None
    assert (await store.catalog.get_endpoint(endpoint_id)).pause is None
    assert await store.graph.list_edges() == []


async def test_postgresql_itself_refuses_a_write_in_a_reading_unit(postgres_url: str) -> None:
    """Past the repositories' guard: a statement that writes, run on a read-only unit's
    connection, is refused by the server (READ ONLY) and reported as the same error."""
    store = await open_sql_store(postgres_url)
    try:
        await add_endpoint(store, "j", "a", T0)
        db = Database(store.engine, postgres_url)
        async with db.transaction(read_only=True) as tx:
            with pytest.raises(ReadOnlyUnit):
                async with tx.read() as conn:
                    await conn.execute(update(endpoints).values(failure_count=1))
    finally:
        await store.close()
