"""One secret key per database (SQLite and PostgreSQL): a worker with another key refuses to
start, and a secret that still cannot be opened fails only its own endpoint's run."""

from __future__ import annotations

import asyncio

import pytest
from cryptography.fernet import Fernet
from sqlalchemy import select, update

from cronpilot.adapters.crypto import SEALED_PREFIX, FernetCipher
from cronpilot.adapters.sql import SqlStore, open_sql_store
from cronpilot.adapters.sql.claims import UNDECRYPTABLE_MESSAGE
from cronpilot.adapters.sql.tables import endpoints, meta
from cronpilot.domain.errors import InvalidConfig
from cronpilot.domain.model import ErrorKind, RunStatus
from cronpilot.domain.ports import SecretCipher
from cronpilot.usecases.declarations import apply_to_catalog
from tests.contract.builders import LEASE_SECONDS, T0, declaration, seconds, spec


def another_cipher() -> FernetCipher:
    return FernetCipher(Fernet.generate_key().decode("ascii"))


async def test_a_worker_with_another_key_refuses_to_start(
    sql_store: SqlStore, sql_url: str, cipher: SecretCipher
) -> None:
    with pytest.raises(InvalidConfig) as refused:
        await open_sql_store(sql_url, another_cipher())

    assert refused.value.where == "CRONPILOT_SECRET_KEY"
    assert "different key" in refused.value.reason
    again = await open_sql_store(sql_url, cipher)
    await again.close()


async def test_workers_starting_together_on_a_fresh_database_agree(sql_url: str) -> None:
    key = Fernet.generate_key().decode("ascii")

    async with asyncio.timeout(20):
        opened = await asyncio.gather(*(open_sql_store(sql_url, FernetCipher(key)) for _ in "abc"))
    for store in opened:
        await store.close()

    with pytest.raises(InvalidConfig):
        await open_sql_store(sql_url, another_cipher())


async def test_the_database_keeps_a_check_never_the_key(sql_url: str) -> None:
    key = Fernet.generate_key().decode("ascii")
    store = await open_sql_store(sql_url, FernetCipher(key))
    try:
        async with store.engine.connect() as conn:
            rows = (await conn.execute(select(meta))).all()
    finally:
        await store.close()

    assert len(rows) == 1
    assert key not in repr(rows)


async def test_an_unopenable_secret_fails_its_run_and_the_batch_goes_on(
    sql_store: SqlStore,
) -> None:
    secret = {"Authorization": "Bearer abc"}
    declared = declaration("j", spec("bad", headers=secret), spec("good", headers=secret))
    await apply_to_catalog(sql_store.catalog, [declared], T0)
    bad = await sql_store.catalog.get_endpoint("j/bad")
    foreign = {"Authorization": SEALED_PREFIX + another_cipher().encrypt("Bearer abc")}
    async with sql_store.engine.begin() as conn:
        await conn.execute(
            update(endpoints).where(endpoints.c.id == bad.id).values(headers=foreign)
        )

    claims = await sql_store.claims.claim_due(T0, "w1", LEASE_SECONDS, 10)

    assert [claim.endpoint.name for claim in claims] == ["good"]
    assert claims[0].endpoint.spec.headers == secret
    [failed] = await sql_store.runs.list_runs(bad.id)
    assert (failed.status, failed.error_kind) == (RunStatus.FAILED, ErrorKind.INTERNAL)
    assert failed.error_message == UNDECRYPTABLE_MESSAGE
    async with sql_store.engine.connect() as conn:
        row = (
            (await conn.execute(select(endpoints).where(endpoints.c.id == bad.id))).mappings().one()
        )
    assert row["headers"] == foreign
    assert (row["lease_owner"], row["failure_count"]) == (None, 1)
    assert row["next_run_at"] > T0 + seconds(60)
