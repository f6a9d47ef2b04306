"""Shared fixtures: databases (a SQLite file copied from, and a PostgreSQL database cloned from,
a template migrated once per session) and `store`, one open `Store` per backend.

Under pytest-xdist every worker is a session of its own: its own templates, its own databases,
named after the worker (`gw0`, …) and its process.

PostgreSQL defaults to postgres@127.0.0.1:5432 (database `test` for admin commands); override
with CRONPILOT_TEST_PG (a base URL such as postgresql://user@host:5433/admin_db). Without a
server PostgreSQL tests are skipped, or failed when CRONPILOT_REQUIRE_POSTGRES=1.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import shutil
from collections.abc import AsyncIterator, Coroutine, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from cryptography.fernet import Fernet
from hypothesis import settings
from sqlalchemy.engine import URL, make_url

from cronpilot.adapters.crypto import FernetCipher
from cronpilot.adapters.http.dispatcher import AiohttpDispatcher
from cronpilot.adapters.sql import open_sql_store, upgrade_database
from cronpilot.domain.ports import SecretCipher, Store
from tests.integration.scheduler.endpoint_server import EndpointServer
from tests.support.memory_store import MemoryStore

# No timed assertion in the suite: Hypothesis' per-example deadline (200 ms) fails a property on a
# loaded 2-core machine (CI runs every core), not on a wrong answer.
settings.register_profile("cronpilot", deadline=None)
settings.load_profile("cronpilot")

DEFAULT_PG = "postgresql://postgres@127.0.0.1:5432/test"
CONNECT_TIMEOUT = 5.0
_database_numbers = itertools.count()
# "gw0", "gw1", … under pytest-xdist; "main" without it. With the pid, no two live sessions
# (two workers, or two runs at once on one server) share a database name.
_SESSION = f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')}_{os.getpid()}"


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


def _in_own_loop(coro: Coroutine[Any, Any, object]) -> None:
    """Run a coroutine from a sync session fixture without touching the tests' event loops."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(asyncio.run, coro).result()


CLOSE_WAIT = 30.0
"""Seconds a session's teardown waits for its databases' drops."""


class _Clones:
    """Clones of the template database, made one ahead of the tests and dropped behind them, each
    on a thread of its own: a test waits for neither the copy of the template nor the
    checkpoint that PostgreSQL takes to drop a database, and a clone waits for no drop."""

    def __init__(self, template: str) -> None:
        self._template = template
        self._maker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pg-clone")
        self._dropper = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pg-drop")
        self._drops: list[Future[None]] = []
        self._next = self._clone()

    def _clone(self) -> Future[str]:
        name = f"cronpilot_t_{_SESSION}_{next(_database_numbers)}"

        async def create() -> str:
            await _admin(f'CREATE DATABASE "{name}" TEMPLATE "{self._template}"')
            return name

        return self._maker.submit(asyncio.run, create())

    async def take(self) -> str:
        """A fresh clone's name; the next one is started at once."""
        made, self._next = self._next, self._clone()
        return await asyncio.wrap_future(made)

    def drop(self, name: str) -> None:
        self._drops.append(
            self._dropper.submit(
                asyncio.run, _admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            )
        )

    def close(self) -> None:
        """Drop the clone made ahead and raise the first drop that failed. Drops still queued
        after `CLOSE_WAIT` go on: the interpreter joins their thread as the process exits, past
        the per-test timeout that this session teardown would otherwise count against the last
        test (on a loaded machine each drop waits for a checkpoint)."""
        self.drop(self._next.result())
        self._maker.shutdown(wait=True)
        self._dropper.shutdown(wait=False)
        done, _ = wait(self._drops, timeout=CLOSE_WAIT)
        for dropped in done:
            dropped.result()


@pytest.fixture(scope="session")
def _pg_clones() -> Iterator[_Clones | str]:
    """The clones of a database migrated once per session, for every `postgres_url`, or a reason
    starting with "unavailable:" when there is no server."""
    name = f"cronpilot_tpl_{_SESSION}"

    async def create() -> None:
        await _admin(f'DROP DATABASE IF EXISTS "{name}"')
        await _admin(f'CREATE DATABASE "{name}"')
        await upgrade_database(_asyncpg_url(name))

    try:
        _in_own_loop(create())
    except (OSError, asyncpg.PostgresError, TimeoutError) as exc:
        yield f"unavailable: PostgreSQL at {_pg_base().render_as_string()} is not reachable ({exc})"
        return
    clones = _Clones(name)
    try:
        yield clones
    finally:
        clones.close()
        _in_own_loop(_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture
async def postgres_url(_pg_clones: _Clones | str) -> AsyncIterator[str]:
    """A SQLAlchemy URL of a fresh, migrated PostgreSQL database, dropped after the test."""
    if isinstance(_pg_clones, str):
        if os.environ.get("CRONPILOT_REQUIRE_POSTGRES") == "1":
            pytest.fail(_pg_clones)
        pytest.skip(_pg_clones)
    name = await _pg_clones.take()
    try:
        yield _asyncpg_url(name)
    finally:
        _pg_clones.drop(name)


@pytest.fixture(scope="session")
def _sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite file migrated once per session, copied by every `sqlite_url`."""
    path = tmp_path_factory.mktemp("sqlite_template") / "cronpilot.db"
    _in_own_loop(upgrade_database(f"sqlite+aiosqlite:///{path}"))
    return path


@pytest.fixture
def sqlite_url(_sqlite_template: Path, tmp_path: Path) -> str:
    """A SQLAlchemy URL of a migrated SQLite file in the test's temporary directory."""
    path = tmp_path / "cronpilot.db"
    shutil.copyfile(_sqlite_template, path)
    return f"sqlite+aiosqlite:///{path}"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def sql_url(request: pytest.FixtureRequest) -> str:
    """A migrated database URL, once per SQL backend."""
    url: str = request.getfixturevalue(f"{request.param}_url")
    return url


@pytest.fixture
async def server() -> AsyncIterator[EndpointServer]:
    """A loopback endpoint server (`EndpointServer`); a module that needs another kind of
    server (hostile, counting, validating) declares its own `server`."""
    async with EndpointServer() as running:
        yield running


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


# Files whose tests take 15 s or more between them (mypy, wheel builds, simulated minutes,
# exams), longest first: measured alone (`pytest -n0 --durations=20 FILE`) on the 2-core machine.
LONG_FILES = (
    "tests/e2e/deploy/test_image.py",
    "tests/test_quality.py",
    "tests/test_packaging.py",
    "tests/e2e/test_planner_eval.py",
    "tests/e2e/test_left_alone.py",
    "tests/e2e/test_example_ten_minutes.py",
    "tests/e2e/test_planner_eval_llm.py",
    "tests/e2e/test_damped_rules.py",
    "tests/e2e/test_example_ten_minutes_heuristic.py",
    "tests/e2e/test_demo.py",
    "tests/integration/api/test_out_of_range.py",
    "tests/e2e/test_soak_bench.py",
    "tests/e2e/test_small_truths_cli.py",
    "tests/integration/test_secrets_never_logged.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test that needs PostgreSQL carries the `postgres` marker, so `-m "not postgres"`
    selects exactly the tests that run without a server.

    The long files, longest first, then the `slow` tests come first: xdist hands files out in
    this order (`--no-loadscope-reorder` in pyproject.toml; by default it would hand out the
    files with the most tests first, and these few-test files last), and a long one handed out
    last leaves the other worker idle at the end (on a clean 2-core run, the last 2 % of the
    tests took nearly 2 of its 8.7 minutes with them last)."""
    for item in items:
        if "postgres_url" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.postgres)
    items.sort(key=_lateness)


def _lateness(item: pytest.Item) -> tuple[int, int]:
    """(0, rank) for the long files, (1, 0) for the other `slow` tests, (2, 0) for the rest."""
    path = item.nodeid.split("::", 1)[0]
    if path in LONG_FILES:
        return 0, LONG_FILES.index(path)
    return (2, 0) if item.get_closest_marker("slow") is None else (1, 0)


@pytest.fixture
async def dispatcher() -> AsyncIterator[AiohttpDispatcher]:
    """A real dispatcher that calls loopback only: the tests' endpoint servers."""
    opened = AiohttpDispatcher(allowed_networks=["127.0.0.1/32"])
    try:
        yield opened
    finally:
        await opened.close()
