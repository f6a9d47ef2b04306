"""Response bodies nested as deep as a test needs: deeper than Python's recursion limit lets
`json` (or any walk that calls itself per level) go."""

from __future__ import annotations

from sqlalchemy import text

from cronpilot.adapters.sql.store import SqlStore
from cronpilot.domain.model import JSON

LEAF = 0.1 + 0.2
"""At the bottom: a float whose binary noise every machine-readable output cuts."""


def nested(depth: int) -> JSON:
    """`depth` containers, objects and arrays in turn, around `{"leaf": LEAF}`."""
    value: JSON = {"leaf": LEAF}
    for level in range(depth - 1):
        value = [value] if level % 2 else {"next": value}
    return value


async def store_body(store: SqlStore, run_id: str, body: str) -> None:
    """Put `body` (JSON text) on a stored run as is, as a store of an earlier version (or a
    caller low enough in its stack) left it: encoding it here, deep in a test's stack, would
    run out of recursion first."""
    cast = "CAST(:body AS jsonb)" if store.engine.dialect.name == "postgresql" else ":body"
    async with store.engine.begin() as conn:
        await conn.execute(
            text(f"UPDATE runs SET body = {cast} WHERE id = :id"),
            {"body": body if cast != ":body" else body.encode(), "id": run_id},
        )
