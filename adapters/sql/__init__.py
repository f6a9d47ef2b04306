"""The SQL store (PostgreSQL via asyncpg, SQLite via aiosqlite) and its migrations.

`SqlStore`, `open_sql_store` and `upgrade_database` are imported from their modules on first
use (PEP 562): importing any module of this package runs this file, and a process that needs
only the engine or the tables should not load the store's repositories with it.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cronpilot.adapters.sql.migrate import upgrade_database
    from cronpilot.adapters.sql.store import SqlStore, open_sql_store

__all__ = ["SqlStore", "open_sql_store", "upgrade_database"]

_MODULES = {
    "SqlStore": "cronpilot.adapters.sql.store",
    "open_sql_store": "cronpilot.adapters.sql.store",
    "upgrade_database": "cronpilot.adapters.sql.migrate",
}


def __getattr__(name: str) -> Any:
    if name not in _MODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(_MODULES[name]), name)
