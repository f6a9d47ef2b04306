"""`SqlStore`: the SQL repositories over one engine (PostgreSQL or SQLite), and its units of
work."""

from __future__ import annotations

import logging
from contextlib import AsyncExitStack
from functools import cached_property
from types import TracebackType
from typing import TYPE_CHECKING, Self

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine

from cronpilot.adapters.sql.engine import (
    DEFAULT_POOL_SIZE,
    Database,
    TransactionDatabase,
    create_engine,
    require_existing_database,
    safe_url,
    unreachable,
)
from cronpilot.adapters.sql.keycheck import verify_secret_key
from cronpilot.domain.log_extra import log_extra
from cronpilot.domain.ports import ReadingUnit, Repositories, SecretCipher, Store, UnitOfWork

if TYPE_CHECKING:
    from cronpilot.adapters.sql.access_repo import SqlAccess
    from cronpilot.adapters.sql.approvals_repo import SqlApprovals
    from cronpilot.adapters.sql.catalog import SqlCatalog
    from cronpilot.adapters.sql.claims import SqlClaims
    from cronpilot.adapters.sql.dag_repo import SqlDag
    from cronpilot.adapters.sql.graph_repo import SqlGraph
    from cronpilot.adapters.sql.notifications_repo import SqlNotifications
    from cronpilot.adapters.sql.planner_repo import SqlPlanner
    from cronpilot.adapters.sql.runs import SqlRuns
    from cronpilot.adapters.sql.schemas_repo import SqlSchemas
    from cronpilot.adapters.sql.vectors_repo import SqlVectors
    from cronpilot.adapters.sql.workers_repo import SqlWorkers

logger = logging.getLogger(__name__)


class SqlRepositories(Repositories):
    """The SQL repositories over one `Database`: per-call transactions on the store's, one
    transaction for them all on a unit of work's.

    Each is made, and its module imported, when first asked for: a CLI read command that lists
    endpoints does not load the claims, the planner's or the graph's SQL, nor the domain
    behind them."""

    def __init__(self, db: Database, cipher: SecretCipher | None) -> None:
        self._repositories_db = db
        self._repositories_cipher = cipher

    @cached_property
    def catalog(self) -> SqlCatalog:
        from cronpilot.adapters.sql.catalog import SqlCatalog

        return SqlCatalog(self._repositories_db, self._repositories_cipher)

    @cached_property
    def claims(self) -> SqlClaims:
        from cronpilot.adapters.sql.claims import SqlClaims

        return SqlClaims(self._repositories_db, self._repositories_cipher)

    @cached_property
    def runs(self) -> SqlRuns:
        from cronpilot.adapters.sql.runs import SqlRuns

        return SqlRuns(self._repositories_db)

    @cached_property
    def planner(self) -> SqlPlanner:
        from cronpilot.adapters.sql.planner_repo import SqlPlanner

        return SqlPlanner(self._repositories_db, self._repositories_cipher)

    @cached_property
    def schemas(self) -> SqlSchemas:
        from cronpilot.adapters.sql.schemas_repo import SqlSchemas

        return SqlSchemas(self._repositories_db)

    @cached_property
    def graph(self) -> SqlGraph:
        from cronpilot.adapters.sql.graph_repo import SqlGraph

        return SqlGraph(self._repositories_db)

    @cached_property
    def dag(self) -> SqlDag:
        from cronpilot.adapters.sql.dag_repo import SqlDag

        return SqlDag(self._repositories_db, self._repositories_cipher)

    @cached_property
    def notifications(self) -> SqlNotifications:
        from cronpilot.adapters.sql.notifications_repo import SqlNotifications

        return SqlNotifications(self._repositories_db, self._repositories_cipher)

    @cached_property
    def workers(self) -> SqlWorkers:
        from cronpilot.adapters.sql.workers_repo import SqlWorkers

        return SqlWorkers(self._repositories_db)

    @cached_property
    def access(self) -> SqlAccess:
        from cronpilot.adapters.sql.access_repo import SqlAccess

        return SqlAccess(self._repositories_db)

    @cached_property
    def approvals(self) -> SqlApprovals:
        from cronpilot.adapters.sql.approvals_repo import SqlApprovals

        return SqlApprovals(self._repositories_db)

    @cached_property
    def vectors(self) -> SqlVectors:
        from cronpilot.adapters.sql.vectors_repo import SqlVectors

        return SqlVectors(self._repositories_db)


class SqlReadingUnit(SqlRepositories, ReadingUnit):
    """`ReadingUnit` on SQL: one connection, one read-only transaction
    (`Database.transaction(read_only=True)`), the repositories built afresh on it (they only
    hold the database, so this costs nothing)."""

    _read_only = True

    def __init__(self, db: Database, cipher: SecretCipher | None) -> None:
        self._db = db
        self._cipher = cipher
        self._scope: AsyncExitStack | None = None
        self._transaction: TransactionDatabase | None = None

    async def __aenter__(self) -> Self:
        if self._scope is not None:
            raise RuntimeError("a unit of work is entered once")
        self._scope = AsyncExitStack()
        self._transaction = await self._scope.enter_async_context(
            self._db.transaction(read_only=self._read_only)
        )
        super().__init__(self._transaction, self._cipher)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        assert self._scope is not None
        await self._scope.__aexit__(exc_type, exc, traceback)


class SqlUnitOfWork(SqlReadingUnit, UnitOfWork):
    """`UnitOfWork` on SQL: a `SqlReadingUnit` that may write, and commit."""

    _read_only = False

    async def commit(self) -> None:
        assert self._transaction is not None, "commit inside `async with`"
        await self._transaction.commit()


class SqlStore(SqlRepositories, Store):
    def __init__(self, db: Database, cipher: SecretCipher | None) -> None:
        super().__init__(db, cipher)
        self._db = db
        self._cipher = cipher

    def unit_of_work(self) -> SqlUnitOfWork:
        return SqlUnitOfWork(self._db, self._cipher)

    def reading(self) -> SqlReadingUnit:
        return SqlReadingUnit(self._db, self._cipher)

    @property
    def engine(self) -> AsyncEngine:
        """The underlying engine, for wakers (LISTEN/NOTIFY) and for tests reading raw rows."""
        return self._db.engine

    async def close(self) -> None:
        await self._db.dispose()


async def open_sql_store(
    url: str, cipher: SecretCipher | None = None, pool_size: int = DEFAULT_POOL_SIZE
) -> SqlStore:
    """Connect to `url` (a SQLAlchemy async URL); raises `StoreUnavailable` if unreachable.

    The schema must already be migrated (`upgrade_database`). With a `cipher`, the database
    must not hold secrets sealed with another key: raises `InvalidConfig` if it does."""
    require_existing_database(url)
    engine = create_engine(url, pool_size)
    try:
        async with engine.connect():
            pass
    except (SQLAlchemyError, OSError) as exc:
        await engine.dispose()
        raise unreachable(exc, url) from exc
    db = Database(engine, url)
    if cipher is not None:
        try:
            await verify_secret_key(db, cipher)
        except BaseException:
            await db.dispose()
            raise
    logger.info("store opened", extra=log_extra("open_store", url=safe_url(url)))
    return SqlStore(db, cipher)
