"""With 100k runs in PostgreSQL, `GET /runs` without a filter reads a page, the first or one
deep in the history, from `NEWEST_RUNS_INDEX` backwards (each partition's part of it, merged
with the queue): no scan of every run, no sort of the history.

The plans explained are those of the statements `page_runs` really sends, captured from the
driver, then explained with the same parameters.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import event

from cronpilot.adapters.sql import open_sql_store
from cronpilot.domain.paging import Cursor
from cronpilot.domain.ports import RunFilter, SecretCipher

RUNS = 100_000
ENDPOINTS = 20
PAGE = 50

# Twenty endpoints of one job; three runs share each second, so pages split equal slots.
SEED = [
    "INSERT INTO jobs (id, name, description, planner_mode) VALUES (md5('job'), 'bulk', '', 'off')",
    f"""
    INSERT INTO endpoints (
        id, job_id, name, description, url, method, headers, timezone, interval_seconds,
        timeout_seconds, max_response_bytes, paused, failure_count, next_run_source)
    SELECT md5(i::text), md5('job'), 'e' || i, '', 'https://example.com/' || i, 'GET',
        '{{}}'::jsonb, 'UTC', 60, 30, 100000, false, 0, 'baseline'
    FROM generate_series(1, {ENDPOINTS}) AS i
    """,
    f"""
    INSERT INTO runs (
        id, endpoint_id, job_id, trace_id, trigger, schedule_source, status, slot_at,
        started_at, worker_id, attempt)
    SELECT md5('run' || i), md5((i % {ENDPOINTS} + 1)::text), md5('job'), md5('trace' || i),
        'schedule', 'baseline', 'success',
        timestamptz '2030-01-01 00:00:00+00' + (i / 3) * interval '1 second',
        timestamptz '2030-01-01 00:00:00+00' + (i / 3) * interval '1 second', 'worker', 1
    FROM generate_series(1, {RUNS}) AS i
    """,
    "ANALYZE runs",
]


@pytest.mark.postgres
async def test_every_run_pages_from_the_newest_runs_index(
    postgres_url: str, cipher: SecretCipher
) -> None:
    store = await open_sql_store(postgres_url, cipher)
    sent: list[tuple[str, Any]] = []

    def capture(conn: Any, cursor: Any, statement: str, parameters: Any, *rest: Any) -> None:
        if "FROM run_queue" in statement and "ORDER BY every_run.slot_at DESC" in statement:
            sent.append((statement, parameters))

    try:
        async with store.engine.begin() as conn:
            for statement in SEED:
                await conn.exec_driver_sql(statement)
        event.listen(store.engine.sync_engine, "before_cursor_execute", capture)
        first = await store.runs.page_runs(RunFilter(), PAGE)
        # Half-way down the history, far from the newest run.
        middle = Cursor(first[-1].slot_at - timedelta(seconds=RUNS // 6), first[-1].id)
        deep = await store.runs.page_runs(RunFilter(), PAGE, middle)
        async with store.engine.connect() as conn:
            plans = []
            for statement, parameters in (sent[0], sent[-1]):
                result = await conn.exec_driver_sql(f"EXPLAIN {statement}", parameters)
                plans.append("\n".join(row[0] for row in result.all()))
    finally:
        await store.close()

    assert len(first) == len(deep) == PAGE
    assert first[-1].slot_at > middle.at >= deep[0].slot_at
    for plan in plans:
        # Each day of the history (and its DEFAULT partition) from its part of
        # `NEWEST_RUNS_INDEX` backwards, merged; only the queue (small by design) is sorted.
        history = [line for line in plan.splitlines() if " on runs_" in line]
        assert history, plan
        for line in history:
            assert "Index Scan Backward using runs_" in line, plan
            assert "_slot_at_id_idx" in line, plan
        assert "Merge Append" in plan, plan
        assert "Seq Scan on runs" not in plan, plan
        assert plan.count("Sort Key") == 2, plan  # the Merge Append's and the queue's
    # Deep in the history the scan starts at the cursor rather than filtering every newer run
    # (beside the lower bound of the days looked at first, `adapters.sql.recent_days`).
    assert re.search(r"Index Cond: \(+slot_at <=", plans[1]), plans[1]
