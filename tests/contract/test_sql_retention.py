"""Retention on SQL deletes in short transactions of bounded size (SQLite and PostgreSQL)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sqlalchemy import event, insert

from cronpilot.adapters.sql import SqlStore
from cronpilot.adapters.sql.engine import Database, create_engine
from cronpilot.adapters.sql.run_rows import run_values
from cronpilot.adapters.sql.runs import SqlRuns
from cronpilot.adapters.sql.tables import runs
from cronpilot.domain.model import RunStatus
from tests.contract.builders import T0, add_endpoint, run_once, seconds

BATCH = 10


async def _history(store: SqlStore, job: str, count: int) -> str:
    """An endpoint with `count` finished runs, one per minute before T0."""
    endpoint_id = await add_endpoint(store, job, "e", T0)
    model = await run_once(store, T0)
    older = [
        run_values(replace(model, id=f"{job}{n:04}".ljust(32, "0"), slot_at=T0 - seconds(60 * n)))
        for n in range(1, count)
    ]
    async with store.engine.begin() as conn:
        await conn.execute(insert(runs), older)
    return endpoint_id


async def test_prune_deletes_in_bounded_transactions(sql_store: SqlStore, sql_url: str) -> None:
    first = await _history(sql_store, "a", 25)
    second = await _history(sql_store, "b", 3)
    db = Database(create_engine(sql_url), sql_url)
    events: list[str] = []

    def on_execute(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if statement.lstrip().upper().startswith("DELETE"):
            events.append("delete")

    def on_commit(conn: Any) -> None:
        events.append("commit")

    event.listen(db.engine.sync_engine, "before_cursor_execute", on_execute)
    event.listen(db.engine.sync_engine, "commit", on_commit)
    try:
        deleted = await SqlRuns(db, prune_batch=BATCH).prune(keep_per_endpoint=2)
    finally:
        await db.dispose()

    assert deleted == 23 + 1
    deletes = [e for e in events if e == "delete"]
    assert len(deletes) == 3
    assert "delete,delete" not in ",".join(events), events
    kept = await sql_store.runs.list_runs(first)
    assert [run.slot_at for run in kept] == [T0, T0 - seconds(60)]
    assert all(run.status is RunStatus.SUCCESS for run in kept)
    assert len(await sql_store.runs.list_runs(second)) == 2
