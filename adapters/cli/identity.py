"""Who is at the keyboard, for audit trails: `ann@web-1`."""

from __future__ import annotations

import getpass
import socket


def who_am_i() -> str:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        # No login name in the environment nor in the password database (some containers).
        user = "unknown"
    return f"{user}@{socket.gethostname()}"
