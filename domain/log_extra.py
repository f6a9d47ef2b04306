"""The `extra=` of a log record built from fields only known at run time.

`logging` refuses (with a KeyError, at the call) an extra named like a `LogRecord` attribute,
so a field such as `created` or `name` would crash the code that logs it. A dict literal of
constant keys is checked by the suite (tests/unit/test_logs.py); fields spread from a variable
go through `log_extra`, which cannot clash.
"""

from __future__ import annotations

import logging

_RESERVED = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
}


def log_extra(action: str, **fields: object) -> dict[str, object]:
    """`extra=` for a record of `action`; a field named like a `LogRecord` attribute is kept as
    `field_<name>` rather than refused."""
    extra: dict[str, object] = {"action": action}
    for key, value in fields.items():
        extra[f"field_{key}" if key in _RESERVED else key] = value
    return extra
