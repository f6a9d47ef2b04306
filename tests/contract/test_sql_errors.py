"""Driver errors become the domain error that says what happened (SQLite and PostgreSQL)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from sqlalchemy import insert, select
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, IntegrityError

from cronpilot.adapters.sql import SqlStore, open_sql_store
from cronpilot.adapters.sql.engine import Database, create_engine
from cronpilot.adapters.sql.tables import jobs, runs
from cronpilot.domain.errors import ConflictError, SlotAlreadyRun, StoreUnavailable, ValueRejected
from cronpilot.domain.model import Finish, Recorded, Response
from cronpilot.domain.ports import SecretCipher
from tests.contract.builders import T0, add_endpoint, claim_one, run_once
from tests.support.finishing import finish_one

MIGRATE_HINT = "cronpilot db upgrade"


@pytest.fixture
async def database(sql_url: str) -> AsyncIterator[Database]:
    """The store's transactions (and their error translation) on the same database."""
    db = Database(create_engine(sql_url), sql_url)
    try:
        yield db
    finally:
        await db.dispose()


async def test_a_second_run_of_a_slot_is_slot_already_run(
    sql_store: SqlStore, database: Database
) -> None:
    endpoint_id = await add_endpoint(sql_store, "j", "e", T0)
    run = await run_once(sql_store, T0)
    async with sql_store.engine.connect() as conn:
        row = (await conn.execute(select(runs).where(runs.c.id == run.id))).mappings().one()

    with pytest.raises(SlotAlreadyRun) as refused:
        async with database.write() as conn:
            await conn.execute(insert(runs).values({**row, "id": "f" * 32}))

    assert isinstance(refused.value.__cause__, IntegrityError)
    if database.dialect == "postgresql":
        assert refused.value.endpoint_id == endpoint_id


async def test_another_integrity_violation_is_a_conflict(
    sql_store: SqlStore, database: Database
) -> None:
    await add_endpoint(sql_store, "shop", "orders", T0)
    same_name = {"id": "e" * 32, "name": "shop", "description": "", "planner_mode": "off"}

    with pytest.raises(ConflictError, match="run the command again") as refused:
        async with database.write() as conn:
            await conn.execute(insert(jobs).values(same_name))

    assert isinstance(refused.value.__cause__, IntegrityError)


async def test_a_missing_table_hints_at_the_migration(
    sql_store: SqlStore, sql_url: str, cipher: SecretCipher
) -> None:
    async with sql_store.engine.begin() as conn:
        await conn.exec_driver_sql("DROP TABLE runs")
        await conn.exec_driver_sql("DROP TABLE cronpilot_meta")

    with pytest.raises(StoreUnavailable, match=MIGRATE_HINT) as refused:
        await sql_store.runs.list_runs("0" * 32)
    with pytest.raises(StoreUnavailable, match=MIGRATE_HINT):
        await open_sql_store(sql_url, cipher)

    assert isinstance(refused.value.__cause__, DBAPIError)


async def test_a_value_postgresql_refuses_is_rejected_and_nothing_is_written(
    postgres_url: str, cipher: SecretCipher
) -> None:
    store = await open_sql_store(postgres_url, cipher)
    try:
        await add_endpoint(store, "j", "e", T0)
        claim = await claim_one(store, T0)

        with pytest.raises(ValueRejected) as refused:
            await finish_one(store.claims, claim, "w1", Response(200, body={"x": "\0"}), T0)

        assert isinstance(refused.value.__cause__, DBAPIError)
        [running] = await store.runs.list_runs(claim.endpoint.id)
        assert running.status == "running"
    finally:
        await store.close()


async def test_a_refused_value_fails_only_its_own_finish_in_a_shared_transaction(
    postgres_url: str, cipher: SecretCipher
) -> None:
    store = await open_sql_store(postgres_url, cipher)
    try:
        for name in ("bad", "good"):
            await add_endpoint(store, "j", name, T0)
        bad, good = await store.claims.claim_due(T0, "w1", 30.0, 2)

        outcomes = await store.claims.finish_many(
            [
                Finish(bad, "w1", Response(200, body={"x": "\0"}), T0, 30.0),
                Finish(good, "w1", Response(200, body={"x": "fine"}), T0, 30.0),
            ]
        )

        assert isinstance(outcomes[0], ValueRejected)
        assert (await store.runs.get_run(bad.run_id)).status == "running"
        recorded = await store.runs.get_run(good.run_id)
        assert isinstance(outcomes[1], Recorded)
        assert outcomes[1].run == recorded
        assert (recorded.status, recorded.body) == ("success", {"x": "fine"})
    finally:
        await store.close()


@pytest.mark.parametrize(
    ("what", "change"),
    [("database", {"database": "cronpilot_no_such_db"}), ("role", {"username": "no_such_role"})],
)
async def test_a_missing_database_or_role_is_not_a_missing_schema(
    postgres_url: str, what: str, change: dict[str, str]
) -> None:
    url = make_url(postgres_url).set(**change).render_as_string(hide_password=False)
    db = Database(create_engine(url), url)
    try:
        with pytest.raises(StoreUnavailable) as refused:
            async with db.read():
                pass
    finally:
        await db.dispose()

    assert what in str(refused.value)
    assert MIGRATE_HINT not in str(refused.value)
