"""With 60k endpoints of which a few are watched for missed runs, PostgreSQL finds the watched
ones that are due by their partial index (`ix_endpoints_watched`, migration 0023): the watch's
pass on every worker costs an index probe, not a scan of every endpoint.

The plan explained is that of the SELECT the store really sends, captured from the driver, then
explained (not run) with the same parameters.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import event

from cronpilot.adapters.sql import open_sql_store
from cronpilot.domain.ports import SecretCipher

ROWS = 60_000
START = datetime(2030, 1, 1, tzinfo=UTC)

SEED = [
    "INSERT INTO jobs (id, name, description, planner_mode) VALUES (md5('job'), 'bulk', '', 'off')",
    f"""
    INSERT INTO endpoints (
        id, job_id, name, description, url, method, headers, timezone, interval_seconds,
        timeout_seconds, max_response_bytes, paused, failure_count, next_run_source,
        next_run_at, missed_after_seconds)
    SELECT md5('e' || i), md5('job'), 'e' || i, '', 'https://example.com/', 'GET', '{{}}'::jsonb,
        'UTC', 60, 30, 100000, false, 0, 'baseline',
        timestamptz '2030-01-01 00:00:00+00' + (i % 600) * interval '1 second',
        CASE WHEN i % 1000 = 0 THEN 600 END
    FROM generate_series(1, {ROWS}) AS i
    """,
    "ANALYZE endpoints",
]


@pytest.mark.postgres
async def test_the_watch_finds_the_due_watched_endpoints_by_their_index(
    postgres_url: str, cipher: SecretCipher
) -> None:
    store = await open_sql_store(postgres_url, cipher)
    sent: list[tuple[str, Any]] = []

    def capture(conn: Any, cursor: Any, statement: str, parameters: Any, *rest: Any) -> None:
        if "missed_after_seconds IS NOT NULL" in statement:
            sent.append((statement, parameters))

    try:
        async with store.engine.begin() as conn:
            for statement in SEED:
                await conn.exec_driver_sql(statement)
        event.listen(store.engine.sync_engine, "before_cursor_execute", capture)
        due = await store.notifications.watched_due(START + timedelta(hours=1), 500)
        [(statement, parameters)] = sent
        async with store.engine.connect() as conn:
            result = await conn.exec_driver_sql(f"EXPLAIN {statement}", parameters)
            plan = "\n".join(row[0] for row in result.all())
    finally:
        await store.close()

    assert len(due) == ROWS // 1000
    assert "ix_endpoints_watched" in plan, plan
    assert "Seq Scan on endpoints" not in plan, plan
