"""With 100k endpoints and 100k runs in PostgreSQL the claim reads its partial indexes (due
endpoints, queued runs), not the whole tables.

The plan explained is that of the one statement `claim_due` really sends (queued runs and due
slots together): it is captured from the driver while a claim runs, then explained with the
same parameters (asyncpg's query logger: the claim goes on the driver's own connection).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import event

from cronpilot.adapters.sql import open_sql_store
from cronpilot.adapters.sql.tables import CLAIM_INDEX, QUEUED_INDEX
from cronpilot.domain.ports import SecretCipher

ENDPOINTS = 100_000
NOW = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
BATCH = 10
QUEUED = 4

# One job; endpoint i is due i seconds after 11:00, every tenth one is leased.
SEED = [
    "INSERT INTO jobs (id, name, description, planner_mode) VALUES (md5('job'), 'bulk', '', 'off')",
    f"""
    INSERT INTO endpoints (
        id, job_id, name, description, url, method, headers, timezone, interval_seconds,
        timeout_seconds, max_response_bytes, paused, failure_count, next_run_at,
        next_run_source, lease_owner, lease_until)
    SELECT md5(i::text), md5('job'), 'e' || i, '', 'https://example.com/' || i, 'GET',
        '{{}}'::jsonb, 'UTC', 60, 30, 100000, false, 0,
        timestamptz '2030-01-01 11:00:00+00' + i * interval '1 second', 'baseline',
        CASE WHEN i % 10 = 0 THEN 'worker' END,
        CASE WHEN i % 10 = 0 THEN timestamptz '2030-01-01 13:00:00+00' END
    FROM generate_series(1, {ENDPOINTS}) AS i
    """,
    # A finished run for each endpoint but the few with a queued run.
    f"""
    INSERT INTO runs (
        id, endpoint_id, job_id, trace_id, trigger, schedule_source, status, slot_at,
        started_at, worker_id, attempt)
    SELECT md5('run' || i), md5(i::text), md5('job'), md5('trace' || i), 'schedule',
        'baseline', 'success', timestamptz '2030-01-01 10:00:00+00' + i * interval '1 second',
        timestamptz '2030-01-01 10:00:00+00', 'worker', 1
    FROM generate_series({QUEUED} + 1, {ENDPOINTS}) AS i
    """,
    f"""
    INSERT INTO run_queue (
        id, endpoint_id, job_id, trace_id, trigger, schedule_source, status, slot_at,
        started_at, worker_id, attempt, due_at)
    SELECT md5('run' || i), md5(i::text), md5('job'), md5('trace' || i), 'manual', 'baseline',
        'queued', timestamptz '2030-01-01 10:00:00+00' + i * interval '1 second',
        timestamptz '2030-01-01 10:00:00+00', 'worker', 1, timestamptz '2030-01-01 11:00:00+00'
    FROM generate_series(1, {QUEUED}) AS i
    """,
    # The runs under way: the leased endpoints'.
    f"""
    INSERT INTO run_queue (
        id, endpoint_id, job_id, trace_id, trigger, schedule_source, status, slot_at,
        started_at, worker_id, attempt)
    SELECT md5('running' || i), md5(i::text), md5('job'), md5('tracing' || i), 'schedule',
        'baseline', 'running', timestamptz '2030-01-01 11:00:00+00' + i * interval '1 second',
        timestamptz '2030-01-01 11:00:00+00', 'worker', 1
    FROM generate_series(10, {ENDPOINTS}, 10) AS i
    """,
    "ANALYZE endpoints",
    "ANALYZE runs",
    "ANALYZE run_queue",
]


@pytest.mark.postgres
async def test_claim_uses_the_claim_indexes(postgres_url: str, cipher: SecretCipher) -> None:
    store = await open_sql_store(postgres_url, cipher)
    sent: list[tuple[str, Any]] = []

    def capture(logged: Any) -> None:
        if "SKIP LOCKED" in logged.query:
            sent.append((logged.query, logged.args))

    def log_queries(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.driver_connection.add_query_logger(capture)

    try:
        async with store.engine.begin() as conn:
            for statement in SEED:
                await conn.exec_driver_sql(statement)
        # The claim's statement goes on asyncpg's own connection: captured there.
        await store.engine.dispose()
        event.listen(store.engine.sync_engine, "connect", log_queries)
        claims = await store.claims.claim_due(NOW, "w1", 30.0, BATCH)
        [(statement, arguments)] = sent
        # EXPLAIN without ANALYZE plans the data-modifying statement without running it.
        async with store.engine.connect() as conn:
            driver = (await conn.get_raw_connection()).driver_connection
            assert driver is not None
            plan = "\n".join(
                row[0] for row in await driver.fetch(f"EXPLAIN {statement}", *arguments)
            )
    finally:
        await store.close()

    assert len(claims) == BATCH
    assert [claim.queued is not None for claim in claims] == [True] * QUEUED + [False] * (
        BATCH - QUEUED
    )
    assert QUEUED_INDEX in plan, plan
    assert CLAIM_INDEX in plan, plan
    # The history's days without runs are empty tables, which any plan reads whole.
    assert "Seq Scan on run_queue" not in plan, plan
    assert "Seq Scan on runs_default" not in plan, plan
    assert "Seq Scan on endpoints" not in plan, plan
