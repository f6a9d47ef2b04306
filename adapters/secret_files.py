"""Secrets read from files, the way containers deliver them (Docker and Kubernetes secrets): the
`${file:PATH}` references of a jobs file and the `CRONPILOT_*_FILE` settings.

A problem is said naming the file, never quoting what it holds.
"""

from __future__ import annotations

import stat
from pathlib import Path

MAX_SECRET_FILE_BYTES = 64 * 1024
"""A secret is a key, a token or a password: a larger file is not one (`/dev/zero`, a log)."""


class SecretFileError(ValueError):
    """A secret file that cannot be used; the message names the file only."""


def read_secret_file(path: str) -> str:
    """The text of the file at `path` without its final line break (which `echo` and editors
    add); raises `SecretFileError` for a missing file, a directory, anything but a regular file
    (a FIFO would block), a file too large, or one that is not UTF-8."""
    file = Path(path)
    try:
        mode = file.stat().st_mode
        if stat.S_ISDIR(mode):
            raise SecretFileError(f"secret file {path} is a directory")
        if not stat.S_ISREG(mode):
            raise SecretFileError(f"secret file {path} is not a regular file")
        with file.open("rb") as handle:
            data = handle.read(MAX_SECRET_FILE_BYTES + 1)
    except FileNotFoundError:
        raise SecretFileError(f"secret file {path} does not exist") from None
    except OSError as exc:
        raise SecretFileError(f"cannot read secret file {path}: {exc.strerror or exc}") from None
    if len(data) > MAX_SECRET_FILE_BYTES:
        raise SecretFileError(f"secret file {path} is larger than {MAX_SECRET_FILE_BYTES:,} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise SecretFileError(f"secret file {path} is not UTF-8 text") from None
    return text.removesuffix("\n").removesuffix("\r")
