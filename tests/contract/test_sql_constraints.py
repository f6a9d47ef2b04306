"""What the SQL schema itself guarantees, whatever a worker believes (SQLite and PostgreSQL)."""

from __future__ import annotations

import pytest
from sqlalchemy import insert, select
from sqlalchemy.exc import IntegrityError

from cronpilot.adapters.sql import SqlStore, open_sql_store
from cronpilot.adapters.sql.tables import runs
from cronpilot.domain.errors import StoreUnavailable
from tests.contract.builders import T0, add_endpoint, run_once


async def test_the_database_refuses_a_second_run_of_a_slot(sql_store: SqlStore) -> None:
    await add_endpoint(sql_store, "j", "e", T0)
    run = await run_once(sql_store, T0)

    async with sql_store.engine.begin() as conn:
        row = (await conn.execute(select(runs).where(runs.c.id == run.id))).mappings().one()
        with pytest.raises(IntegrityError):
            await conn.execute(insert(runs).values({**row, "id": "f" * 32}))


async def test_runs_go_with_their_endpoint(sql_store: SqlStore) -> None:
    endpoint_id = await add_endpoint(sql_store, "j", "e", T0)
    await run_once(sql_store, T0)

    async with sql_store.engine.begin() as conn:
        await conn.exec_driver_sql("DELETE FROM endpoints")
        assert (await conn.execute(select(runs.c.id))).all() == []
    assert await sql_store.runs.list_runs(endpoint_id) == []


async def test_an_unreachable_database_is_one_clear_error() -> None:
    with pytest.raises(StoreUnavailable, match="cannot reach the database") as caught:
        await open_sql_store("postgresql+asyncpg://nobody:secret@127.0.0.1:9/none")

    assert "secret" not in str(caught.value)
    assert caught.value.__cause__ is not None
