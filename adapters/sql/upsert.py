"""`INSERT … ON CONFLICT`, which SQLAlchemy builds per dialect: PostgreSQL's and SQLite's
constructs share the methods the stores use (`on_conflict_do_nothing`, `on_conflict_do_update`,
`from_select`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import Table

if TYPE_CHECKING:
    from sqlalchemy.dialects.postgresql import Insert as PgInsert
    from sqlalchemy.dialects.sqlite import Insert as SqliteInsert


def conflict_insert(dialect: str, table: Table) -> PgInsert | SqliteInsert:
    """An insert into `table` that can say what to do on a conflict, for `dialect`."""
    if dialect == "postgresql":
        # Imported here, so that a command on SQLite does not load the PostgreSQL dialect's
        # drivers for an insert it never makes.
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        return pg_insert(table)
    from sqlalchemy.dialects.sqlite import insert as sqlite_insert

    return sqlite_insert(table)
