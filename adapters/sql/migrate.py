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

from cronpilot import migrations
from cronpilot.adapters.sql.engine import Database, create_engine, safe_url
from cronpilot.domain.log_extra import log_extra

if TYPE_CHECKING:
    from alembic.config import Config
    from sqlalchemy import Connection

logger = logging.getLogger(__name__)


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


def _upgrade_head(connection: Connection, config: Config) -> Upgrade:
    from alembic import command

    before = _revision(connection)
    # env.py runs on this connection instead of opening its own.
    config.attributes["connection"] = connection
    command.upgrade(config, "head")
    return Upgrade(before, _revision(connection))


async def upgrade_database(url: str) -> Upgrade:
    """Bring the database at `url` to the newest schema; raises `StoreUnavailable`."""
    db = Database(create_engine(url), url)
    try:
        async with db.write() as conn:
            upgrade = await conn.run_sync(_upgrade_head, alembic_config())
    finally:
        await db.dispose()
    logger.info(
        "database upgraded from %s to %s",
        upgrade.before,
        upgrade.after,
        extra=log_extra("db_upgrade", url=safe_url(url)),
    )
    return upgrade
