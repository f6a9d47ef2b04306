"""The one-statement finish on PostgreSQL (`adapters.sql.finish_statement`): a batch whose
endpoint rows are as their claims left them is written by one driver statement; a finish whose
row changed since its claim, or whose lease is gone, is decided again from what is stored."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import asyncpg
import pytest
from sqlalchemy import event, text

from cronpilot.adapters.sql import SqlStore
from cronpilot.adapters.sql.finish_statement import _json_text
from cronpilot.domain.errors import LeaseLost, StoreUnavailable
from cronpilot.domain.model import Finish, OneShotHint, Pause, Recorded, RunStatus
from cronpilot.domain.runs.settling import settle
from cronpilot.domain.runs.transitions import started_run
from tests.contract.builders import LEASE_SECONDS, OK, T0, add_endpoint, seconds
from tests.support.scheduling import set_hints, set_pause

pytestmark = pytest.mark.postgres


@contextmanager
def sqlalchemy_statements(store: SqlStore) -> Iterator[list[str]]:
    """The statements SQLAlchemy sends while the block runs (the driver's own are not seen)."""
    seen: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        seen.append(statement)

    event.listen(store.engine.sync_engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(store.engine.sync_engine, "before_cursor_execute", record)


async def cut_connections(store: SqlStore) -> None:
    """End every server process of the store's database, as a restart would, from outside its
    pool: the pooled connections are dead when next used."""
    url = store.engine.url
    outside = await asyncpg.connect(
        host=url.host, port=url.port, user=url.username, database=url.database
    )
    try:
        await outside.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    finally:
        await outside.close()


def finish(claim: Any, worker: str = "w1", at: float = 1) -> Finish:
    return Finish(claim, worker, OK, T0 + seconds(at), LEASE_SECONDS)


async def test_a_batch_of_unchanged_rows_is_written_by_one_driver_statement(
    pg_store: SqlStore,
) -> None:
    for n in range(3):
        await add_endpoint(pg_store, "j", f"e{n}", T0)
    claims = await pg_store.claims.claim_due(T0, "w1", LEASE_SECONDS, 10)
    assert len(claims) == 3
    assert all(claim.stored is not None for claim in claims)

    with sqlalchemy_statements(pg_store) as seen:
        outcomes = await pg_store.claims.finish_many([finish(claim) for claim in claims])

    assert seen == [], "the general path (SQLAlchemy) was not needed"
    for claim, outcome in zip(claims, outcomes, strict=True):
        assert isinstance(outcome, Recorded)
        running = started_run(claim, "w1", T0)
        expected = settle(claim.endpoint, running, OK, T0 + seconds(1))
        assert outcome.run == expected.run
        assert await pg_store.runs.list_runs(claim.endpoint.id) == [expected.run]
        assert await pg_store.catalog.get_endpoint(claim.endpoint.id) == expected.endpoint


async def test_a_row_changed_since_the_claim_is_decided_again_from_the_store(
    pg_store: SqlStore,
) -> None:
    paused_id = await add_endpoint(pg_store, "j", "paused", T0)
    hinted_id = await add_endpoint(pg_store, "j", "hinted", T0)
    calm_id = await add_endpoint(pg_store, "j", "calm", T0)
    claims = {c.endpoint.id: c for c in await pg_store.claims.claim_due(T0, "w1", 30.0, 10)}
    pause = Pause(until=T0 + seconds(3600), reason="maintenance")
    await set_pause(pg_store.catalog, paused_id, pause, T0)
    hint = OneShotHint(at=T0 + seconds(20), expires_at=T0 + seconds(600), reason="soon")
    await set_hints(pg_store.catalog, hinted_id, None, hint, T0)

    stored = {id_: await pg_store.catalog.get_endpoint(id_) for id_ in claims}

    with sqlalchemy_statements(pg_store) as seen:
        outcomes = await pg_store.claims.finish_many([finish(c) for c in claims.values()])

    assert seen, "the changed rows went the general way"
    assert all(isinstance(outcome, Recorded) for outcome in outcomes)
    for endpoint_id, claim in claims.items():
        running = started_run(claim, "w1", T0)
        expected = settle(stored[endpoint_id], running, OK, T0 + seconds(1))
        assert await pg_store.catalog.get_endpoint(endpoint_id) == expected.endpoint
        assert await pg_store.runs.list_runs(endpoint_id) == [expected.run]
    paused = await pg_store.catalog.get_endpoint(paused_id)
    assert (paused.pause, paused.lease_owner) == (pause, None)
    assert (await pg_store.catalog.get_endpoint(hinted_id)).oneshot_hint == hint
    assert (await pg_store.catalog.get_endpoint(calm_id)).next_run_at == T0 + seconds(60)


async def test_a_lease_reaped_and_taken_again_is_lost_to_the_first_worker(
    pg_store: SqlStore,
) -> None:
    endpoint_id = await add_endpoint(pg_store, "j", "e", T0)
    [first] = await pg_store.claims.claim_due(T0, "w1", LEASE_SECONDS, 10)
    later = T0 + seconds(LEASE_SECONDS + 1)
    assert await pg_store.claims.reap(later) == 1
    [second] = await pg_store.claims.claim_due(later + seconds(60), "w2", LEASE_SECONDS, 10)

    [outcome] = await pg_store.claims.finish_many([finish(first, "w1", LEASE_SECONDS + 70)])

    assert isinstance(outcome, LeaseLost)
    endpoint = await pg_store.catalog.get_endpoint(endpoint_id)
    assert endpoint.lease_owner == "w2"
    statuses = {run.id: run.status for run in await pg_store.runs.list_runs(endpoint_id)}
    assert statuses[second.run_id] is RunStatus.RUNNING
    assert statuses[first.run_id] is not RunStatus.SUCCESS


async def test_a_claim_in_a_unit_of_work_is_part_of_its_transaction(pg_store: SqlStore) -> None:
    endpoint_id = await add_endpoint(pg_store, "j", "e", T0)

    async with pg_store.unit_of_work() as tx:
        [claim] = await tx.claims.claim_due(T0, "w1", LEASE_SECONDS, 10)
        assert claim.endpoint.id == endpoint_id
        # Not committed: the lease and the running run go with the unit.

    assert (await pg_store.catalog.get_endpoint(endpoint_id)).lease_owner is None
    assert await pg_store.runs.list_runs(endpoint_id) == []


async def test_the_driver_s_errors_are_the_store_s(pg_store: SqlStore) -> None:
    await add_endpoint(pg_store, "j", "e", T0)
    async with pg_store.engine.begin() as conn:
        await conn.exec_driver_sql("ALTER TABLE runs RENAME TO runs_elsewhere")

    with pytest.raises(StoreUnavailable, match="cronpilot db upgrade"):
        await pg_store.claims.claim_due(T0, "w1", LEASE_SECONDS, 10)


async def test_claims_and_finishes_come_back_after_their_connections_are_cut(
    pg_store: SqlStore,
) -> None:
    await add_endpoint(pg_store, "j", "e", T0)
    [claim] = await pg_store.claims.claim_due(T0, "w1", LEASE_SECONDS, 10)
    await cut_connections(pg_store)

    # The pooled connections died with their backends: a call may fail once, not for ever.
    for _ in range(3):
        [outcome] = await pg_store.claims.finish_many([finish(claim)])
        if not isinstance(outcome, StoreUnavailable):
            break
    assert isinstance(outcome, Recorded)
    later = T0 + seconds(3600)
    for _ in range(3):
        try:
            assert len(await pg_store.claims.claim_due(later, "w1", LEASE_SECONDS, 10)) == 1
            break
        except StoreUnavailable:
            continue
    else:
        raise AssertionError("the claim never came back")


async def test_a_claim_comes_back_after_its_connections_are_cut(pg_store: SqlStore) -> None:
    await add_endpoint(pg_store, "j", "e", T0)
    # Several connections in the pool, each to fail when next used.
    early = T0 - seconds(60)
    await asyncio.gather(
        *(pg_store.claims.claim_due(early, "w1", LEASE_SECONDS, 10) for _ in range(4))
    )
    await cut_connections(pg_store)
    failures = 0
    for _ in range(5):
        try:
            claims = await pg_store.claims.claim_due(T0, "w1", LEASE_SECONDS, 10)
            break
        except StoreUnavailable:
            failures += 1
    else:
        raise AssertionError("the claim never came back")
    assert len(claims) == 1
    assert failures <= 1


async def test_a_body_is_written_as_it_came_not_encoded_again(pg_store: SqlStore) -> None:
    """JSONB keeps a number's digits as written: `1.10` stays `1.10` only when the text that
    came is what is written (encoding the decoded 1.1 again would write `1.1`)."""
    for name in ("e0", "e1"):
        await add_endpoint(pg_store, "j", name, T0)
    as_text, decoded = await pg_store.claims.claim_due(T0, "w1", LEASE_SECONDS, 10)
    came = replace(OK, body={"n": 1.1}, body_text='{"n": 1.10}')
    batch = [Finish(as_text, "w1", came, T0 + seconds(1), LEASE_SECONDS)]
    batch.append(Finish(decoded, "w1", replace(came, body_text=None), T0, LEASE_SECONDS))

    outcomes = await pg_store.claims.finish_many(batch)

    assert all(isinstance(outcome, Recorded) for outcome in outcomes)
    async with pg_store.engine.connect() as conn:
        stored = await conn.execute(text("SELECT id, body::text FROM runs"))
        bodies = dict(stored.all())
    assert bodies == {as_text.run_id: '{"n": 1.10}', decoded.run_id: '{"n": 1.1}'}
    run = await pg_store.runs.get_run(as_text.run_id)
    assert run.body == {"n": 1.1}


@pytest.mark.parametrize(
    "value",
    [
        [{"attempt": 1, "started_at": "2026-11-29T08:00:00+00:00", "duration_ms": 12.345}],
        {"method": "GET", "headers": {"X-Page": "é"}, "body": None},
        {"lone": "\ud800"},
        [2**70],
        {1: "a key that is no string"},
    ],
)
def test_json_goes_as_text_that_decodes_to_what_json_would(value: object) -> None:
    """orjson writes most values; what it refuses `json` writes: the text means the same."""
    assert json.loads(_json_text(value) or "") == json.loads(json.dumps(value))
