"""The migrated schema equals `adapters.sql.tables` (no drift), on SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Connection, inspect

from cronpilot.adapters.sql.engine import create_engine
from cronpilot.adapters.sql.partitions import outside_partitions
from cronpilot.adapters.sql.tables import CLAIM_INDEX, metadata


def _drift(connection: Connection) -> list[Any]:
    opts = {"compare_type": True, "include_name": outside_partitions}
    context = MigrationContext.configure(connection, opts=opts)
    return list(compare_metadata(context, metadata))


def _indexes(connection: Connection) -> set[str]:
    return {str(index["name"]) for index in inspect(connection).get_indexes("endpoints")}


async def test_upgrade_head_matches_the_tables(sql_url: str) -> None:
    engine = create_engine(sql_url)
    try:
        async with engine.connect() as conn:
            drift = await conn.run_sync(_drift)
            indexes = await conn.run_sync(_indexes)
    finally:
        await engine.dispose()

    assert drift == []
    assert CLAIM_INDEX in indexes
