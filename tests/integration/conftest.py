"""Fixtures of the PostgreSQL integration tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from cronpilot.adapters.sql import SqlStore, open_sql_store
from cronpilot.adapters.sql.engine import Database, create_engine
from cronpilot.domain.ports import SecretCipher


@pytest.fixture
async def pg_store(postgres_url: str, cipher: SecretCipher) -> AsyncIterator[SqlStore]:
    store = await open_sql_store(postgres_url, cipher)
    try:
        yield store
    finally:
        await store.close()


@pytest.fixture
async def pg_database(postgres_url: str) -> AsyncIterator[Database]:
    """The store's transactions on the same database, for what only the SQL store has."""
    db = Database(create_engine(postgres_url), postgres_url)
    try:
        yield db
    finally:
        await db.dispose()
