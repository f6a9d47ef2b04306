"""Debian's PgBouncer (`/usr/sbin/pgbouncer`) in transaction pooling mode on a free 127.0.0.1
port, in front of the tests' PostgreSQL, for tests that run cronpilot through it."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from sqlalchemy.engine import make_url

from tests.support.hostile_server import unused_port

PGBOUNCER = "/usr/sbin/pgbouncer"
START_SECONDS = 10.0
RUN_AS = "postgres"
"""PgBouncer refuses to run as root; Debian's package comes with this user."""


def pgbouncer_missing() -> str | None:
    """Why no PgBouncer can be started here, or None."""
    if not os.access(PGBOUNCER, os.X_OK):
        return f"{PGBOUNCER} is missing (apt-get install pgbouncer; .ci/run installs it)"
    if os.geteuid() == 0 and not _user_exists(RUN_AS):
        return f"running as root, and there is no user {RUN_AS!r} for PgBouncer to run as"
    return None


def _user_exists(name: str) -> bool:
    import pwd

    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def _configure(upstream: str, folder: Path) -> tuple[Path, int]:
    """The ini file for PgBouncer in front of `upstream`'s server, and the port it listens on."""
    url = make_url(upstream)
    port = unused_port()
    folder.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        folder.chmod(0o755)
    user = url.username or "postgres"
    (folder / "users.txt").write_text(f'"{user}" ""\n')
    ini = folder / "pgbouncer.ini"
    ini.write_text(
        f"""\
[databases]
* = host={url.host or "127.0.0.1"} port={url.port or 5432}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {port}
unix_socket_dir =
auth_type = trust
auth_file = {folder / "users.txt"}
pool_mode = transaction
default_pool_size = 10
max_client_conn = 400
ignore_startup_parameters = extra_float_digits
"""
    )
    return ini, port


@asynccontextmanager
async def pgbouncer(upstream: str, folder: Path) -> AsyncIterator[str]:
    """PgBouncer in front of the database of `upstream` (a SQLAlchemy URL): yields the same URL
    through it, with `?pgbouncer=true`. Its log is `folder/pgbouncer.log`."""
    ini, port = _configure(upstream, folder)
    as_user = ["-u", RUN_AS] if os.geteuid() == 0 else []
    with (folder / "pgbouncer.log").open("wb") as log:
        process = await asyncio.create_subprocess_exec(
            PGBOUNCER, *as_user, str(ini), stdout=log, stderr=log
        )
    try:
        await _until_listening(port, process)
        through = make_url(upstream).set(host="127.0.0.1", port=port)
        yield through.update_query_dict({"pgbouncer": "true"}).render_as_string(hide_password=False)
    finally:
        if process.returncode is None:
            process.terminate()
            await process.wait()


async def _until_listening(port: int, process: asyncio.subprocess.Process) -> None:
    async with asyncio.timeout(START_SECONDS):
        while True:
            if process.returncode is not None:
                raise RuntimeError(f"pgbouncer exited with {process.returncode} (see its log)")
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                await asyncio.sleep(0.05)
                continue
            writer.close()
            await writer.wait_closed()
            return
