"""Alembic environment: one history for PostgreSQL and SQLite, run on an async engine.

Programmatic runs (`adapters.sql.migrate.upgrade_database`) hand over a connection in
`config.attributes["connection"]`; the `alembic` command line opens its own engine from
`-x url=…` or `sqlalchemy.url` in alembic.ini.
"""

from __future__ import annotations

import asyncio
import logging.config

from alembic import context
from sqlalchemy import Connection

from cronpilot.adapters.sql.engine import create_engine, sqlite_foreign_keys
from cronpilot.adapters.sql.partitions import outside_partitions
from cronpilot.adapters.sql.tables import metadata

config = context.config


def _url() -> str:
    url = context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option(
        "sqlalchemy.url"
    )
    if not url:
        raise SystemExit("no database URL: pass -x url=… or set sqlalchemy.url")
    return url


def _configure(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        # SQLite cannot ALTER most things; batch mode rebuilds the table instead.
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
        # The history's partitions are made by housekeeping, not described in the metadata.
        include_name=outside_partitions,
    )


def _run(connection: Connection) -> None:
    _configure(connection)
    with context.begin_transaction():
        context.run_migrations()


async def _run_with_own_engine() -> None:
    engine = create_engine(_url())
    try:
        async with engine.connect() as connection:
            if connection.dialect.name == "sqlite":
                await sqlite_foreign_keys(connection, on=False)
            await connection.run_sync(_run)
            await connection.commit()
    finally:
        await engine.dispose()


def _main() -> None:
    if context.is_offline_mode():
        context.configure(url=_url(), target_metadata=metadata, literal_binds=True)
        with context.begin_transaction():
            context.run_migrations()
        return
    shared = config.attributes.get("connection")
    if shared is not None:
        _run(shared)
        return
    if config.config_file_name is not None:
        logging.config.fileConfig(config.config_file_name)
    asyncio.run(_run_with_own_engine())


_main()
