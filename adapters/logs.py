"""Log formatting: the `extra={"action": …}` fields every module logs come out searchable,
as `key=value` pairs for people or one JSON object per line for log shippers."""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any, Literal

LogFormat = Literal["text", "json"]

# Attributes every LogRecord has; anything else on a record came from `extra=`.
_STANDARD = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime", "taskName"}


def _extras(record: logging.LogRecord) -> dict[str, Any]:
    return {key: value for key, value in vars(record).items() if key not in _STANDARD}


class TextFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        pairs = " ".join(f"{key}={value}" for key, value in _extras(record).items())
        return f"{line} {pairs}" if pairs else line


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        # What the record says of itself comes first and stays: an extra named `level` must
        # not make an error look like an info line to a log shipper.
        entry.update((key, value) for key, value in _extras(record).items() if key not in entry)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def configure_logging(level: str, log_format: LogFormat = "text") -> None:
    """Send logs to stderr in `log_format`; replaces handlers set by an earlier call."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    handler.addFilter(drop_quoted_values)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # Alembic announces each of its autogenerate plugins on first use, at INFO: noise in a
    # worker, which only reads the schema's revision.
    logging.getLogger("alembic.runtime.plugins").setLevel(logging.WARNING)


QUOTING_LOGGERS = ("aiosqlite", "sqlalchemy.engine")
"""Libraries whose DEBUG lines quote the data they handle: aiosqlite each call it runs with
its arguments (statements' parameters), SQLAlchemy's engine each row a statement returns
(URLs, headers, bodies). Their INFO lines and above stay: SQLAlchemy's statements leave their
parameters out (`hide_parameters`, `adapters.sql.engine`). asyncpg and aiohttp's client log
no request."""


def drop_quoted_values(record: logging.LogRecord) -> bool:
    """A handler's filter: whatever level a logger is set to, the DEBUG lines of
    `QUOTING_LOGGERS` are never written (secrets are never logged)."""
    if record.levelno >= logging.INFO:
        return True
    return not any(
        record.name == name or record.name.startswith(f"{name}.") for name in QUOTING_LOGGERS
    )
