"""What a database URL names: its backend, and the file of a SQLite database."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from cronpilot.domain.errors import InvalidConfig


def _database_url(database_url: str) -> URL:
    try:
        return make_url(database_url)
    except ArgumentError as exc:
        raise InvalidConfig("CRONPILOT_DATABASE_URL", "not a database URL") from exc


def is_postgres(database_url: str) -> bool:
    return _database_url(database_url).get_backend_name() == "postgresql"


def sqlite_file(database_url: str) -> Path | None:
    """The file of a SQLite URL; None for an in-memory database (or another backend)."""
    url = _database_url(database_url)
    database = url.database or ""
    if url.get_backend_name() != "sqlite" or database in ("", ":memory:"):
        return None
    if url.query.get("uri") == "true":
        # `sqlite:///file:name?mode=memory&uri=true`: the driver reads the name as a URI.
        if url.query.get("mode") == "memory":
            return None
        database = database.removeprefix("file:")
    return Path(database)
