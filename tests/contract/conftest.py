"""Fixtures for the SQL-only contract tests (constraints, errors, retention, keys)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from cronpilot.adapters.sql import SqlStore, open_sql_store
from cronpilot.domain.ports import SecretCipher


@pytest.fixture
async def sql_store(sql_url: str, cipher: SecretCipher) -> AsyncIterator[SqlStore]:
    """An open SQL store on SQLite, then on PostgreSQL."""
    store = await open_sql_store(sql_url, cipher)
    try:
        yield store
    finally:
        await store.close()
