"""The SQL store (PostgreSQL via asyncpg, SQLite via aiosqlite) and its migrations.

`SqlStore`, `open_sql_store` and `upgrade_database` are imported from their modules on first
use (PEP 562): importing any module of this package runs this file, and a process that needs
only the engine or the tables should not load the store's repositories with it. Nor SQLAlchemy's
ORM: see `_async_engine_without_the_orm`.
"""

from __future__ import annotations

import sys
from importlib import import_module
from importlib.util import find_spec, module_from_spec
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


_ASYNC = "sqlalchemy.ext.asyncio"


def _async_engine_without_the_orm() -> None:
    """Let `sqlalchemy.ext.asyncio.engine` be imported without its package's `__init__`, which
    imports the ORM's session for `AsyncSession` (near a third of SQLAlchemy's import time, and
    no use to a store of Core statements: docs/decisions/0034-core-cli-start-up.md).

    The package is registered unexecuted; the first attribute asked of it that is not one of
    its modules runs its `__init__` in place, so a user of `AsyncSession` still finds it.
    This package's modules import from `sqlalchemy.ext.asyncio.engine`."""
    if _ASYNC in sys.modules:
        return
    import_module("sqlalchemy.ext")
    spec = find_spec(_ASYNC)
    assert spec is not None and spec.loader is not None
    package = module_from_spec(spec)
    loader = spec.loader

    def complete(name: str) -> Any:
        if name.startswith("__") or find_spec(f"{_ASYNC}.{name}") is not None:
            raise AttributeError(name)
        del package.__dict__["__getattr__"]
        loader.exec_module(package)
        return getattr(package, name)

    package.__getattr__ = complete  # type: ignore[method-assign]
    sys.modules[_ASYNC] = package
    # What the package's `__init__` does besides importing: greenlet for the async engine.
    from sqlalchemy.util import concurrency

    concurrency._concurrency_shim._initialize()


_async_engine_without_the_orm()
