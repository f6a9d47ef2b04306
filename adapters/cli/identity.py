"""Who is at the keyboard, for audit trails: `ann@web-1`, as an actor `cli:ann@web-1`."""

from __future__ import annotations

import getpass
import socket

from cronpilot.domain.access.access import cli_actor


def who_am_i() -> str:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        # No login name in the environment nor in the password database (some containers).
        user = "unknown"
    return f"{user}@{socket.gethostname()}"


def actor() -> str:
    """Who writes, as use cases record it (runs, pauses, decisions, the audit log)."""
    return cli_actor(who_am_i())
