"""Shared fixtures: databases (a migrated SQLite file, a fresh PostgreSQL database cloned from
a template migrated once per session) and `store`, one open `Store` per backend.

PostgreSQL defaults to postgres@127.0.0.1:5432 (database `test` for admin commands); override
with CRONPILOT_TEST_PG (a base URL such as postgresql://user@host:5433/admin_db). Without a
server PostgreSQL tests are skipped, or failed when CRONPILOT_REQUIRE_POSTGRES=1.
"""

from __future__ import annotations

import asyncio
import itertools
import os
from collections.abc import AsyncIterator, Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from cryptography.fernet import Fernet
from sqlalchemy.engine import URL, make_url

from cronpilot.adapters.crypto import FernetCipher
from cronpilot.adapters.sql import open_sql_store, upgrade_database
from cronpilot.domain.ports import SecretCipher, Store
from tests.support.memory_store import MemoryStore

DEFAULT_PG = "postgresql://postgres@127.0.0.1:5432/test"
CONNECT_TIMEOUT = 5.0
_database_numbers = itertools.count()


def _pg_base() -> URL:
    return make_url(os.environ.get("CRONPILOT_TEST_PG", DEFAULT_PG))


def _asyncpg_url(database: str) -> str:
    return (
        _pg_base()
        .set(drivername="postgresql+asyncpg", database=database)
        .render_as_string(hide_password=False)
    )


async def _admin(sql: str) -> None:
    base = _pg_base()
    conn = await asyncpg.connect(
        host=base.host or "127.0.0.1",
        port=base.port or 5432,
        user=base.username or "postgres",
        password=base.password,
        database=base.database or "postgres",
        timeout=CONNECT_TIMEOUT,
    )
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


def _in_own_loop(coro: Coroutine[Any, Any, None]) -> None:
    """Run a coroutine from a sync session fixture without touching the tests' event loops."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(asyncio.run, coro).result()


@pytest.fixture(scope="session")
def _pg_template() -> Iterator[str]:
    """A database migrated once per session, cloned by every `postgres_url`.

    Yields its name, or a reason starting with "unavailable:" when there is no server."""
    name = f"cronpilot_tpl_{os.getpid()}"

    async def create() -> None:
        await _admin(f'DROP DATABASE IF EXISTS "{name}"')
        await _admin(f'CREATE DATABASE "{name}"')
        await upgrade_database(_asyncpg_url(name))

    try:
        _in_own_loop(create())
    except (OSError, asyncpg.PostgresError, TimeoutError) as exc:
        yield f"unavailable: PostgreSQL at {_pg_base().render_as_string()} is not reachable ({exc})"
        return
    yield name
    _in_own_loop(_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture
async def postgres_url(_pg_template: str) -> AsyncIterator[str]:
    """A SQLAlchemy URL of a fresh, migrated PostgreSQL database, dropped after the test."""
    if _pg_template.startswith("unavailable:"):
        if os.environ.get("CRONPILOT_REQUIRE_POSTGRES") == "1":
            pytest.fail(_pg_template)
        pytest.skip(_pg_template)
    name = f"cronpilot_t_{os.getpid()}_{next(_database_numbers)}"
    await _admin(f'CREATE DATABASE "{name}" TEMPLATE "{_pg_template}"')
    try:
        yield _asyncpg_url(name)
    finally:
        await _admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
async def sqlite_url(tmp_path: Path) -> str:
    """A SQLAlchemy URL of a migrated SQLite file in the test's temporary directory."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'cronpilot.db'}"
    await upgrade_database(url)
    return url


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def sql_url(request: pytest.FixtureRequest) -> str:
    """A migrated database URL, once per SQL backend."""
    url: str = request.getfixturevalue(f"{request.param}_url")
    return url


@pytest.fixture(scope="session")
def cipher() -> SecretCipher:
    return FernetCipher(Fernet.generate_key().decode("ascii"))


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest) -> str | None:
    """The migrated database URL behind `store`; None for the in-memory store."""
    if request.param == "memory":
        return None
    # A sync fixture may pull the async URL fixtures; an async one could not (running loop).
    url: str = request.getfixturevalue(f"{request.param}_url")
    return url


@pytest.fixture
async def store(store_url: str | None, cipher: SecretCipher) -> AsyncIterator[Store]:
    """An open, empty store of each backend (SQL stores encrypt secrets with `cipher`)."""
    opened: Store = MemoryStore() if store_url is None else await open_sql_store(store_url, cipher)
    try:
        yield opened
    finally:
        await opened.close()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test that needs PostgreSQL carries the `postgres` marker, so `-m "not postgres"`
    selects exactly the tests that run without a server."""
    for item in items:
        if "postgres_url" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.postgres)
