"""Schema migrations, run programmatically (the CLI's `db upgrade`, tests, the demo).

The Alembic scripts ship inside the `migrations` package and are found through its
`__file__`, so this works from an installed package whatever the working directory.
Alembic is imported only when a migration runs: the CLI's read commands must not pay for it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import inspect, text
from sqlalchemy.exc import SQLAlchemyError

from cronpilot import migrations
from cronpilot.adapters.sql.engine import (
    Database,
    create_engine,
    require_existing_database,
    safe_url,
    unreachable,
)
from cronpilot.domain.errors import DatabaseUnusable
from cronpilot.domain.log_extra import log_extra

if TYPE_CHECKING:
    from alembic.config import Config
    from sqlalchemy import Connection

    from cronpilot.domain.ports import SecretCipher

logger = logging.getLogger(__name__)

_VERSION_TABLE = "alembic_version"


def alembic_config() -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(Path(migrations.__file__).parent))
    return config


@dataclass(frozen=True, slots=True)
class Upgrade:
    """The schema revisions a database had before an upgrade (None: it had no schema) and
    after it."""

    before: str | None
    after: str | None


def _revision(connection: Connection) -> str | None:
    from alembic.runtime.migration import MigrationContext

    return MigrationContext.configure(connection).get_current_revision()


def _stamped_revision(connection: Connection) -> str | None:
    """The revision in Alembic's table, None without one; read as `_revision` would, without
    the lines Alembic logs for a migration."""
    if not inspect(connection).has_table(_VERSION_TABLE):
        return None
    return connection.execute(text(f"SELECT version_num FROM {_VERSION_TABLE}")).scalar()


def _upgrade_head(connection: Connection, config: Config) -> Upgrade:
    from alembic import command

    before = _revision(connection)
    # env.py runs on this connection instead of opening its own.
    config.attributes["connection"] = connection
    command.upgrade(config, "head")
    if connection.dialect.name == "sqlite":
        # The migrations ran with foreign keys off (`engine.sqlite_foreign_keys`).
        broken = connection.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
        if broken:
            raise RuntimeError(f"the upgrade left rows whose references are broken: {broken[:5]}")
    return Upgrade(before, _revision(connection))


async def require_head(url: str) -> None:
    """Raise `DatabaseUnusable` unless the database at `url` has this build's schema (the
    newest migration it ships): none, an older one (run `cronpilot db upgrade`) or one this
    build does not know (another application's, or a newer cronpilot's) will not become it by
    waiting. `StoreUnavailable` when the database cannot be reached."""
    from alembic.script import ScriptDirectory

    require_existing_database(url)
    engine = create_engine(url, pool_size=1)
    try:
        async with engine.connect() as conn:
            revision = await conn.run_sync(_stamped_revision)
    except (SQLAlchemyError, OSError) as exc:
        raise unreachable(exc, url) from exc
    finally:
        await engine.dispose()
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    if revision == head:
        return
    found = "has no cronpilot schema" if revision is None else f"has schema {revision}"
    raise DatabaseUnusable(
        f"database {safe_url(url)} {found}, this build needs {head}: "
        "run `cronpilot db upgrade` with this build"
    )


async def upgrade_database(url: str, cipher: SecretCipher | None = None) -> Upgrade:
    """Bring the database at `url` to the newest schema, then seal with `cipher` what older
    versions stored in clear (`adapters.sql.sealing`); raises `StoreUnavailable`, or
    `InvalidConfig` for a cipher that is not the database's."""
    from cronpilot.adapters.sql.sealing import seal_stored_urls

    db = Database(create_engine(url), url)
    try:
        async with db.migrating() as conn:
            upgrade = await conn.run_sync(_upgrade_head, alembic_config())
        if cipher is not None:
            await seal_stored_urls(db, cipher)
    finally:
        await db.dispose()
    logger.info(
        "database upgraded from %s to %s",
        upgrade.before,
        upgrade.after,
        extra=log_extra("db_upgrade", url=safe_url(url)),
    )
    return upgrade
