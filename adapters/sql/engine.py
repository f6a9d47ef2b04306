"""Engines, transactions and driver-error translation for the SQL store.

SQLite needs three things PostgreSQL does not: WAL (readers do not block the writer), a busy
timeout (writers queue instead of failing), and foreign keys switched on (off by default).
Write transactions on SQLite start with `BEGIN IMMEDIATE`: a deferred transaction that reads
and then writes can fail at once with "database is locked" when another writer got there
first, while an immediate one takes the write lock up front and waits its turn.

A PostgreSQL URL with `?pgbouncer=true` goes through PgBouncer in transaction pooling mode
(docs/many-machines.md, "Behind PgBouncer"): a server connection is ours for one transaction
only, so nothing may outlive one. asyncpg keeps no statement cache and SQLAlchemy prepares each
statement unnamed, inside the transaction that runs it; statements that would run outside a
transaction (PostgreSQL's lone reads and writes, below) get one.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Executable, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DataError, DBAPIError, IntegrityError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from cronpilot.adapters.sql.tables import QUEUE_SLOT_KEY, SLOT_KEY
from cronpilot.domain.errors import (
    ConflictError,
    CronpilotError,
    DatabaseUnusable,
    ReadOnlyUnit,
    SlotAlreadyRun,
    StoreUnavailable,
    ValueRejected,
)

SQLITE_BUSY_TIMEOUT_MS = 10_000
CONNECT_TIMEOUT_SECONDS = 10.0
"""How long a new PostgreSQL connection may take (asyncpg waits 60 s by default). A server
that restarts behind a firewall or a container's address drops the connection attempt
silently: a call that needs a new connection would hang for a minute while the worker's leases
are kept, so it fails sooner and the worker retries."""
DEFAULT_POOL_SIZE = 5
_UNDEFINED_TABLE = "42P01"
_READ_ONLY_TRANSACTION = "25006"
_SQLITE_MISSING_TABLE = "no such table"
_SLOT_KEYS = re.compile(
    # The history's key (on PostgreSQL reported by the partition's index: `runs_p…_endpoint_id_
    # slot_at_key`), the queue's, and SQLite's wording of either.
    rf"{SLOT_KEY}|{QUEUE_SLOT_KEY}|runs_\w*endpoint_id_slot_at_key|runs\.endpoint_id, "
    r"runs\.slot_at|run_queue\.endpoint_id, run_queue\.slot_at"
)
_SLOT_DETAIL = re.compile(
    r"\(endpoint_id, slot_at\)=\((?P<endpoint_id>[^,]+), (?P<slot_at>[^)]+)\)"
)
_IMMEDIATE = "cronpilot_sqlite_immediate"
PGBOUNCER = "pgbouncer"
"""The query parameter of a PostgreSQL URL that says it goes through PgBouncer in transaction
pooling mode (`?pgbouncer=true`); the driver never sees it."""
_UNPOOLED_STATEMENTS = {
    # No statement cache in asyncpg, and none in SQLAlchemy's dialect, whose statements are
    # unnamed: a named one would stay on a server connection that the next transaction, on
    # another client's behalf, may try to prepare again.
    "statement_cache_size": 0,
    "prepared_statement_cache_size": 0,
    "prepared_statement_name_func": lambda: "",
}


def behind_pgbouncer(url: str) -> bool:
    """Whether `url` says it goes through PgBouncer in transaction pooling mode."""
    return make_url(url).query.get(PGBOUNCER) == "true"


def driver_url(url: str) -> str:
    """`url` as the driver takes it: without our `pgbouncer` parameter."""
    parsed = make_url(url)
    if PGBOUNCER not in parsed.query:
        return url
    return parsed.difference_update_query([PGBOUNCER]).render_as_string(hide_password=False)


def safe_url(url: str) -> str:
    """The URL fit for messages and logs (password hidden)."""
    return make_url(url).render_as_string(hide_password=True)


def _sqlite_connect(dbapi_connection: Any, _record: Any) -> None:
    # Take BEGIN away from the driver so `_sqlite_begin` decides which BEGIN to send.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


async def sqlite_foreign_keys(conn: AsyncConnection, *, on: bool) -> None:
    """Turn SQLite's foreign keys on or off for `conn`, outside any transaction (inside one
    SQLite ignores the pragma). A migration runs with them off: batch mode rebuilds a table by
    dropping it, and with them on that drop would delete, by ON DELETE CASCADE, every row that
    refers to it (an endpoint's runs). `PRAGMA foreign_key_check` proves the result instead."""
    driver = (await conn.get_raw_connection()).driver_connection
    assert driver is not None, "a live pooled connection has its driver's"
    await driver.execute(f"PRAGMA foreign_keys={'ON' if on else 'OFF'}")


def _sqlite_begin(conn: Any) -> None:
    immediate = conn.get_execution_options().get(_IMMEDIATE, False)
    conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def _sqlite_json(value: Any) -> bytes:
    """JSON for SQLite, as a BLOB. A column declared JSON has NUMERIC affinity, which turns
    text that reads as a number into INTEGER or REAL: a body that is a 40-digit integer would
    come back as 1.2345678901234568e+39 (PostgreSQL's JSONB keeps it exactly), and `1.0` as
    `1`. SQLite stores a BLOB as given, and the JSON type decodes it as it decodes text."""
    return json.dumps(value).encode()


def _json_loads(text: str | bytes) -> Any:
    """`json.loads`, but an empty list or object (most of an endpoint's JSON columns: no
    dependants, no notify targets, no headers …) is made without the decoder, which costs some
    twenty times more; a claim reads a dozen such columns per endpoint."""
    if text == "[]":
        return []
    if text == "{}":
        return {}
    return json.loads(text)


def create_engine(url: str, pool_size: int = DEFAULT_POOL_SIZE) -> AsyncEngine:
    """An async engine for `url`, with the SQLite connection settings above when needed.

    `pool_size` matters on PostgreSQL, where a worker finishes many runs at once; SQLite has one
    writer whatever the pool, so it keeps SQLAlchemy's default pool. Raises `StoreUnavailable`
    for a SQLite file that cannot be one (see `_require_sqlite_file`). Statements' parameters
    (header secrets, URLs, bodies) stay out of SQLAlchemy's logs and error messages, at any
    level."""
    if make_url(url).get_backend_name() == "sqlite":
        _require_sqlite_file(url)
        engine = create_async_engine(
            url,
            json_serializer=_sqlite_json,
            json_deserializer=_json_loads,
            hide_parameters=True,
        )
    else:
        connect_args: dict[str, Any] = {"timeout": CONNECT_TIMEOUT_SECONDS}
        if behind_pgbouncer(url):
            connect_args.update(_UNPOOLED_STATEMENTS)
        engine = create_async_engine(
            driver_url(url),
            pool_size=pool_size,
            max_overflow=pool_size // 2,
            connect_args=connect_args,
            json_deserializer=_json_loads,
            hide_parameters=True,
        )
    if engine.dialect.name == "sqlite":
        event.listen(engine.sync_engine, "connect", _sqlite_connect)
        event.listen(engine.sync_engine, "begin", _sqlite_begin)
    return engine


def _sqlite_file(url: str) -> Path | None:
    """The file a SQLite URL names; None for any other URL, an in-memory database or a URI
    (whose options the driver reads)."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        return None
    database = parsed.database or ""
    if database in ("", ":memory:") or parsed.query.get("uri") or database.startswith("file:"):
        return None
    return Path(database)


def require_existing_database(url: str) -> None:
    """Refuse a SQLite file that does not exist yet: the driver would create an empty one,
    and a command that only opens a store (to read, or to write into a schema it expects)
    must leave no file behind; `db upgrade` creates it."""
    path = _sqlite_file(url)
    if path is not None and path.parent.is_dir() and not path.exists():
        raise DatabaseUnusable(
            f"no database at {path}: create it with `cronpilot db upgrade` "
            f"(CRONPILOT_DATABASE_URL={safe_url(url)})"
        )


def _require_sqlite_file(url: str) -> None:
    """Refuse a SQLite file whose folder is missing, or that is a folder, before the driver
    tries it: aiosqlite's worker thread, failing to open it, may outlive the event loop and
    print a traceback after the command's error line."""
    path = _sqlite_file(url)
    if path is None:
        return
    if not path.parent.is_dir():
        raise DatabaseUnusable(
            f"cannot reach the database {safe_url(url)}: folder {path.parent} does not exist"
        )
    if path.is_dir():
        raise DatabaseUnusable(
            f"cannot reach the database {safe_url(url)}: {path} is a folder, not a file"
        )


def unreachable(exc: Exception, url: str) -> StoreUnavailable:
    """The error of a failed first connection to `url`: `DatabaseUnusable` when the file is
    not a SQLite database (corrupt, or something else altogether), which no retry mends;
    `StoreUnavailable` otherwise (a server down, a locked file)."""
    reason = driver_error(exc)
    message = f"cannot reach the database {safe_url(url)}: {type(reason).__name__}: {reason}"
    # sqlite3's OperationalError (locked, cannot open) may pass; its other DatabaseErrors
    # ("file is not a database", "database disk image is malformed") stay.
    if isinstance(reason, sqlite3.DatabaseError) and not isinstance(
        reason, sqlite3.OperationalError
    ):
        return DatabaseUnusable(message)
    return StoreUnavailable(message)


class Database:
    """An engine plus the two kinds of transaction the repositories use."""

    def __init__(self, engine: AsyncEngine, url: str) -> None:
        self.engine = engine
        self.url = url
        self.dialect = engine.dialect.name
        self._autocommit = self.dialect == "postgresql" and not behind_pgbouncer(url)
        """Whether lone statements run without a transaction block (module note)."""

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncConnection]:
        """Statements that only read. On PostgreSQL they run without a transaction: at READ
        COMMITTED each statement takes its own snapshot either way, while the BEGIN and the
        ROLLBACK that returns the connection to the pool cost two round trips per read. On
        SQLite the block stays one read transaction: one WAL snapshot for all its statements.
        Behind PgBouncer they run in a transaction too (module note)."""
        async with self._connect(autocommit=self._autocommit) as conn:
            yield conn

    @asynccontextmanager
    async def _connect(self, *, autocommit: bool) -> AsyncIterator[AsyncConnection]:
        with translate_driver_errors(self.url):
            async with self.engine.connect() as conn:
                if autocommit:
                    await conn.execution_options(isolation_level="AUTOCOMMIT")
                yield conn

    @asynccontextmanager
    async def write(self) -> AsyncIterator[AsyncConnection]:
        """One transaction, committed when the block ends and rolled back on any error."""
        with translate_driver_errors(self.url):
            async with self.engine.connect() as conn:
                if self.dialect == "sqlite":
                    await conn.execution_options(**{_IMMEDIATE: True})
                async with conn.begin():
                    yield conn

    @asynccontextmanager
    async def migrating(self) -> AsyncIterator[AsyncConnection]:
        """`write` for a change of schema: on SQLite with foreign keys off
        (`sqlite_foreign_keys`), turned on again after it."""
        if self.dialect != "sqlite":
            async with self.write() as conn:
                yield conn
            return
        with translate_driver_errors(self.url):
            async with self.engine.connect() as conn:
                await conn.execution_options(**{_IMMEDIATE: True})
                await sqlite_foreign_keys(conn, on=False)
                try:
                    async with conn.begin():
                        yield conn
                finally:
                    await sqlite_foreign_keys(conn, on=True)

    @asynccontextmanager
    async def driver(
        self, *, transaction: bool = False
    ) -> AsyncIterator[tuple[AsyncConnection, Any]]:
        """asyncpg's own connection, for statements whose parameters or rows SQLAlchemy would
        slow down (the claim, `finish_statement`), with SQLAlchemy's on the same connection for
        the rest. SQLAlchemy's is left in AUTOCOMMIT, so it opens no transaction of its own:
        with `transaction` (and behind PgBouncer, module note) the driver opens one around the
        block, committed when it ends and rolled back on any error; without, each statement is
        its own. The driver's errors are translated as SQLAlchemy's are."""
        with translate_driver_errors(self.url):
            async with self.engine.connect() as conn:
                await conn.execution_options(isolation_level="AUTOCOMMIT")
                driver = (await conn.get_raw_connection()).driver_connection
                assert driver is not None, "a live pooled connection has its driver's"
                try:
                    if transaction or not self._autocommit:
                        async with driver.transaction():
                            yield conn, driver
                    else:
                        yield conn, driver
                except BaseException:
                    # SQLAlchemy did not see the driver fail: a connection the server closed
                    # (a restart, a terminated backend) would go back to the pool, and every
                    # later call would fail on it. As SQLAlchemy does on a disconnect, the
                    # pool's other connections, likely closed by the same restart, go too.
                    if driver.is_closed():
                        await conn.invalidate()
                        await self.engine.dispose()
                    raise

    async def write_one(
        self, statement: Executable, parameters: Mapping[str, Any] | None = None
    ) -> int:
        """One writing statement (no RETURNING), atomic on its own; returns its row count.
        PostgreSQL makes a lone statement atomic without a transaction block, so it runs there
        in AUTOCOMMIT: one round trip instead of BEGIN, statement, COMMIT. SQLite takes its
        write lock up front, as in `write`; behind PgBouncer, as in `write` too."""
        alone = self._connect(autocommit=True) if self._autocommit else self.write()
        async with alone as conn:
            return int((await conn.execute(statement, parameters)).rowcount)

    @asynccontextmanager
    async def transaction(self, *, read_only: bool = False) -> AsyncIterator[TransactionDatabase]:
        """A `Database` whose reads and writes all run on one connection in one transaction
        (a unit of work). Its `commit` keeps the writes; whatever was not committed when the
        block ends, by an exception or not, is rolled back.

        `read_only` reads one snapshot and holds up no writer: on SQLite a deferred BEGIN (the
        first read takes a WAL snapshot, no write lock), on PostgreSQL a READ ONLY transaction
        at REPEATABLE READ (one snapshot for every statement, where READ COMMITTED takes one
        per statement). Its `write` and `write_one` raise `ReadOnlyUnit`; PostgreSQL refuses
        any other write itself (translated to the same error)."""
        with translate_driver_errors(self.url):
            async with self.engine.connect() as conn:
                if read_only and self.dialect == "postgresql":
                    await conn.execution_options(
                        isolation_level="REPEATABLE READ", postgresql_readonly=True
                    )
                elif not read_only and self.dialect == "sqlite":
                    # A unit reads and then writes: take the write lock up front (module note).
                    await conn.execution_options(**{_IMMEDIATE: True})
                transaction = await conn.begin()
                try:
                    yield TransactionDatabase(self, conn, read_only=read_only)
                finally:
                    if transaction.is_active:
                        await transaction.rollback()

    async def dispose(self) -> None:
        await self.engine.dispose()


class TransactionDatabase(Database):
    """A `Database` on one connection inside a transaction: `read`, `write` and `write_one`
    all use it, so the repositories built on it run unchanged inside a unit of work, their
    statements one transaction. The per-call transactions of `Database` stay for the workers'
    hot path."""

    def __init__(self, db: Database, conn: AsyncConnection, *, read_only: bool) -> None:
        super().__init__(db.engine, db.url)
        self._conn = conn
        self._read_only = read_only

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncConnection]:
        with translate_driver_errors(self.url):
            yield self._conn

    @asynccontextmanager
    async def write(self) -> AsyncIterator[AsyncConnection]:
        if self._read_only:
            raise ReadOnlyUnit
        with translate_driver_errors(self.url):
            yield self._conn

    @asynccontextmanager
    async def driver(
        self, *, transaction: bool = False
    ) -> AsyncIterator[tuple[AsyncConnection, Any]]:
        """The unit's own connection, its statements part of the unit's transaction. SQLAlchemy
        sends BEGIN with a transaction's first statement: one is sent first, so that the
        driver's statements cannot run ahead of it, outside the transaction."""
        if self._read_only:
            raise ReadOnlyUnit
        with translate_driver_errors(self.url):
            await self._conn.exec_driver_sql("SELECT 1")
            driver = (await self._conn.get_raw_connection()).driver_connection
            yield self._conn, driver

    async def write_one(
        self, statement: Executable, parameters: Mapping[str, Any] | None = None
    ) -> int:
        if self._read_only:
            raise ReadOnlyUnit
        with translate_driver_errors(self.url):
            return int((await self._conn.execute(statement, parameters)).rowcount)

    async def commit(self) -> None:
        with translate_driver_errors(self.url):
            await self._conn.commit()


@contextmanager
def translate_driver_errors(url: str) -> Iterator[None]:
    """Turn driver errors into the domain's errors, the original kept as `__cause__`:

    - integrity violations: `SlotAlreadyRun` on the slot key, `ConflictError` otherwise (a row
      written at the same time by someone else: the remedy is to try again);
    - data exceptions: `ValueRejected` (the same change would fail again);
    - a write in a read-only transaction: `ReadOnlyUnit`;
    - everything else (unreachable server, lost connection, missing schema, locks that time
      out, unexpected driver states): `StoreUnavailable`, hinting at `cronpilot db upgrade`
      only when a table is missing.

    Nothing is logged here: the caller reports the error it gets, once (the workers' store
    health says an outage once, however many calls it fails).
    """
    try:
        yield
    except (SQLAlchemyError, OSError) as exc:
        raise _translated(exc, url) from exc
    except Exception as exc:
        # asyncpg's own, from statements sent on its connection (`Database.driver`): matched
        # by module, as importing asyncpg here would slow every CLI command's start.
        if type(exc).__module__.partition(".")[0] != "asyncpg":
            raise
        raise _translated(exc, url) from exc


def driver_error(exc: BaseException) -> BaseException:
    """The driver's own error under SQLAlchemy's wrapper (the error itself when unwrapped)."""
    return exc.orig if isinstance(exc, DBAPIError) and exc.orig is not None else exc


def sqlstate_of(exc: BaseException) -> str:
    """PostgreSQL's SQLSTATE of a driver error, wrapped or not ("" when it has none).
    asyncpg reports it; SQLAlchemy maps many of its classes (22 data exceptions among them)
    to the generic DBAPIError, so the class alone is not enough."""
    return str(getattr(driver_error(exc), "sqlstate", "") or "")


def _translated(exc: Exception, url: str) -> CronpilotError:
    reason = driver_error(exc)
    sqlstate = sqlstate_of(exc)
    if isinstance(exc, IntegrityError) or sqlstate.startswith("23"):
        if _SLOT_KEYS.search(str(reason)):
            return _slot_already_run(reason)
        return ConflictError(str(reason))
    if sqlstate == _READ_ONLY_TRANSACTION:
        return ReadOnlyUnit()
    if isinstance(exc, DataError) or sqlstate.startswith("22"):
        return ValueRejected(str(reason))
    hint = ""
    if sqlstate == _UNDEFINED_TABLE or _SQLITE_MISSING_TABLE in str(reason):
        hint = " (is the schema migrated? run `cronpilot db upgrade`)"
    return StoreUnavailable(
        f"database {safe_url(url)} failed: {type(reason).__name__}: {reason}{hint}"
    )


def _slot_already_run(reason: BaseException) -> SlotAlreadyRun:
    """PostgreSQL names the pair in its detail, `Key (endpoint_id, slot_at)=(…, …)`; SQLite
    names only the columns."""
    detail = str(getattr(reason.__cause__, "detail", "") or "")
    found = _SLOT_DETAIL.search(detail)
    if found is None:
        return SlotAlreadyRun("unknown", "unknown")
    return SlotAlreadyRun(found["endpoint_id"], found["slot_at"])
