"""The SQL store (PostgreSQL via asyncpg, SQLite via aiosqlite) and its migrations."""

from cronpilot.adapters.sql.migrate import upgrade_database
from cronpilot.adapters.sql.store import SqlStore, open_sql_store

__all__ = ["SqlStore", "open_sql_store", "upgrade_database"]
