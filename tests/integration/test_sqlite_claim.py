"""The claim on SQLite (`adapters.sql.sqlite_claim`): the statements it sends do not grow with
the runs it claims, whether slots or queued runs; what it claims is the contract suite's."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import event

from cronpilot.adapters.sql import SqlStore, open_sql_store
from cronpilot.domain.model import RunStatus, RunTrigger
from cronpilot.domain.ports import SecretCipher
from cronpilot.domain.runs.transitions import queued_run
from tests.contract.builders import LEASE_SECONDS, T0, add_endpoint, seconds


@pytest.fixture
async def sqlite_store(sqlite_url: str, cipher: SecretCipher) -> AsyncIterator[SqlStore]:
    store = await open_sql_store(sqlite_url, cipher)
    try:
        yield store
    finally:
        await store.close()


@contextmanager
def statements(store: SqlStore) -> Iterator[list[str]]:
    """The statements sent while the block runs, BEGIN and COMMIT included."""
    seen: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        seen.append(statement.split(None, 1)[0].upper())

    def began(_conn: Any) -> None:
        seen.append("BEGIN")

    event.listen(store.engine.sync_engine, "before_cursor_execute", record)
    event.listen(store.engine.sync_engine, "begin", began)
    try:
        yield seen
    finally:
        event.remove(store.engine.sync_engine, "before_cursor_execute", record)
        event.remove(store.engine.sync_engine, "begin", began)


async def _claimed_slots(store: SqlStore, count: int, job: str) -> list[str]:
    for n in range(count):
        await add_endpoint(store, job, f"e{n}", T0)
    with statements(store) as seen:
        claims = await store.claims.claim_due(T0, "w1", LEASE_SECONDS, 100)
    assert len(claims) == count
    for claim in claims:
        assert (await store.runs.get_run(claim.run_id)).status is RunStatus.RUNNING
    return seen


async def test_a_claim_of_many_slots_sends_the_statements_of_one(sqlite_store: SqlStore) -> None:
    one = await _claimed_slots(sqlite_store, 1, "a")
    many = await _claimed_slots(sqlite_store, 20, "b")

    assert many == one
    # Lease and read back, then start the runs: one statement each.
    assert one.count("UPDATE") == 1
    assert one.count("INSERT") == 1


async def _claimed_queued(store: SqlStore, count: int, job: str) -> list[str]:
    # Asked for ahead of the endpoints' first slots (T0), which are not due yet when claimed.
    at = T0 - seconds(10)
    for n in range(count):
        await add_endpoint(store, job, f"e{n}", T0)
        endpoint = await store.catalog.get_endpoint(f"{job}/e{n}")
        run = queued_run(
            endpoint, RunTrigger.MANUAL, slot_at=at, due_at=at, requested_by="me", now=at
        )
        assert await store.claims.enqueue([run]) == [run]
    with statements(store) as seen:
        claims = await store.claims.claim_due(at + seconds(1), "w1", LEASE_SECONDS, 100)
    assert len(claims) == count
    assert all(claim.queued is not None for claim in claims)
    return seen


async def test_a_claim_of_many_queued_runs_sends_the_statements_of_one(
    sqlite_store: SqlStore,
) -> None:
    one = await _claimed_queued(sqlite_store, 1, "a")
    many = await _claimed_queued(sqlite_store, 5, "b")

    assert many == one
