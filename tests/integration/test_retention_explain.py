"""With 60k rows in each table PostgreSQL prunes by an index on the time column retention
reads (migration 0019): a batch past the window is found without a scan of every row.

The plans explained are those of the DELETEs the store really sends, captured from the
driver, then explained (not run) with the same parameters.
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
AT = "timestamptz '2030-01-01 00:00:00+00' + i * interval '1 second'"

SEED = [
    "INSERT INTO jobs (id, name, description, planner_mode) VALUES (md5('job'), 'bulk', '', 'off')",
    """
    INSERT INTO endpoints (
        id, job_id, name, description, url, method, headers, timezone, interval_seconds,
        timeout_seconds, max_response_bytes, paused, failure_count, next_run_source)
    VALUES (md5('e'), md5('job'), 'e', '', 'https://example.com/', 'GET', '{}'::jsonb, 'UTC',
        60, 30, 100000, false, 0, 'baseline')
    """,
    f"""
    INSERT INTO analysis_sessions (
        id, endpoint_id, job_id, planner, started_at, finished_at, status, reasoning,
        prompt_tokens, completion_tokens, tool_errors, tool_calls)
    SELECT md5('s' || i), md5('e'), md5('job'), CASE WHEN i % 2 = 0 THEN 'rules' ELSE 'heuristic'
        END, {AT}, {AT}, 'submitted', '', 0, 0, 0, '[]'::jsonb
    FROM generate_series(1, {ROWS}) AS i
    """,
    f"""
    INSERT INTO proposals (
        id, endpoint_id, job_id, kind, reason, proposed_by, created_at, status)
    SELECT md5('p' || i), md5('e'), md5('job'), 'interval', '', 'heuristic', {AT},
        CASE WHEN i % 10 = 0 THEN 'pending' ELSE 'applied' END
    FROM generate_series(1, {ROWS}) AS i
    """,
    f"""
    INSERT INTO notifications (
        id, endpoint_id, job_id, event, url, payload, status, attempts, next_attempt_at,
        created_at)
    SELECT md5('n' || i), md5('e'), md5('job'), 'failing', 'https://h.example', '{{}}'::jsonb,
        CASE WHEN i % 10 = 0 THEN 'pending' ELSE 'delivered' END, 1, {AT}, {AT}
    FROM generate_series(1, {ROWS}) AS i
    """,
    f"""
    INSERT INTO audit_log (id, at, actor, action, target, detail)
    SELECT md5('a' || i), {AT}, 'cli:ann@host', 'pause', 'bulk/e', ''
    FROM generate_series(1, {ROWS}) AS i
    """,
    "ANALYZE analysis_sessions, proposals, notifications, audit_log",
]

INDEXES = {
    "analysis_sessions": "ix_analysis_sessions_started",
    "proposals": "ix_proposals_status",
    "notifications": "ix_notifications_created",
    "audit_log": "ix_audit_log_at",
}


@pytest.mark.postgres
async def test_each_prune_finds_its_batch_by_an_index(
    postgres_url: str, cipher: SecretCipher
) -> None:
    store = await open_sql_store(postgres_url, cipher)
    sent: list[tuple[str, Any]] = []

    def capture(conn: Any, cursor: Any, statement: str, parameters: Any, *rest: Any) -> None:
        if statement.lstrip().upper().startswith("DELETE"):
            sent.append((statement, parameters))

    # A minute past the first rows: a few dozen of each table's 60k have had their time.
    cutoff = START + timedelta(minutes=1)
    try:
        async with store.engine.begin() as conn:
            for statement in SEED:
                await conn.exec_driver_sql(statement)
        event.listen(store.engine.sync_engine, "before_cursor_execute", capture)
        pruned = [
            await store.planner.prune_sessions(cutoff, cutoff, 500),
            await store.planner.prune_proposals(cutoff, 500),
            await store.notifications.prune(cutoff, 500),
            await store.access.prune_audit(cutoff, 500),
        ]
        async with store.engine.connect() as conn:
            plans = {}
            for statement, parameters in sent:
                table = statement.split()[2]
                result = await conn.exec_driver_sql(f"EXPLAIN {statement}", parameters)
                plans[table] = "\n".join(row[0] for row in result.all())
    finally:
        await store.close()

    assert pruned == [59, 54, 54, 59]
    assert set(plans) == set(INDEXES)
    for table, index in INDEXES.items():
        assert index in plans[table], plans[table]
        assert f"Seq Scan on {table}" not in plans[table], plans[table]
