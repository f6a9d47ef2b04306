"""`SqlStore`: the three SQL repositories over one engine (PostgreSQL or SQLite)."""

from __future__ import annotations

import logging

from sqlalchemy.exc import DBAPIError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine

from cronpilot.adapters.sql.catalog import SqlCatalog
from cronpilot.adapters.sql.claims import SqlClaims
from cronpilot.adapters.sql.dag_repo import SqlDag
from cronpilot.adapters.sql.engine import DEFAULT_POOL_SIZE, Database, create_engine, safe_url
from cronpilot.adapters.sql.graph_repo import SqlGraph, SqlSchemas
from cronpilot.adapters.sql.keycheck import verify_secret_key
from cronpilot.adapters.sql.notifications_repo import SqlNotifications
from cronpilot.adapters.sql.planner_repo import SqlPlanner
from cronpilot.adapters.sql.runs import SqlRuns
from cronpilot.domain.errors import StoreUnavailable
from cronpilot.domain.ports import SecretCipher

logger = logging.getLogger(__name__)


class SqlStore:
    def __init__(self, db: Database, cipher: SecretCipher | None) -> None:
        self._db = db
        self._catalog = SqlCatalog(db, cipher)
        self._claims = SqlClaims(db, cipher)
        self._runs = SqlRuns(db)
        self._planner = SqlPlanner(db)
        self._schemas = SqlSchemas(db)
        self._graph = SqlGraph(db)
        self._dag = SqlDag(db, cipher)
        self._notifications = SqlNotifications(db)

    @property
    def catalog(self) -> SqlCatalog:
        return self._catalog

    @property
    def claims(self) -> SqlClaims:
        return self._claims

    @property
    def runs(self) -> SqlRuns:
        return self._runs

    @property
    def planner(self) -> SqlPlanner:
        return self._planner

    @property
    def schemas(self) -> SqlSchemas:
        return self._schemas

    @property
    def graph(self) -> SqlGraph:
        return self._graph

    @property
    def dag(self) -> SqlDag:
        return self._dag

    @property
    def notifications(self) -> SqlNotifications:
        return self._notifications

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
    engine = create_engine(url, pool_size)
    try:
        async with engine.connect():
            pass
    except (SQLAlchemyError, OSError) as exc:
        await engine.dispose()
        reason = exc.orig if isinstance(exc, DBAPIError) and exc.orig is not None else exc
        raise StoreUnavailable(
            f"cannot reach the database {safe_url(url)}: {type(reason).__name__}: {reason}"
        ) from exc
    db = Database(engine, url)
    if cipher is not None:
        try:
            await verify_secret_key(db, cipher)
        except BaseException:
            await db.dispose()
            raise
    logger.info("store opened", extra={"action": "open_store", "url": safe_url(url)})
    return SqlStore(db, cipher)
