"""`cronpilot scheduler` as a process facing a database: one that can never work (no folder,
no file, not a database, not cronpilot's schema) ends it with one line and exit 3 at once; one
that is only unreachable is waited for, with one warning, while `/readyz` says not ready."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from tests.e2e.conftest import Cli

WAIT_SECONDS = 30
SCHEDULER = (sys.executable, "-m", "cronpilot.adapters.cli.entry", "scheduler")


def _one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if " INFO " not in line]
    assert len(lines) == 1, stderr
    assert lines[0].startswith("error: "), stderr
    return lines[0]


def _sqlite(path: Path) -> str:
    return f"sqlite+aiosqlite:///{path}"


def _other_schema(path: Path) -> Path:
    import sqlite3

    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE notes (text TEXT)")
    return path


@pytest.mark.parametrize(
    ("database", "says"),
    [
        (lambda tmp: tmp / "missing" / "cronpilot.db", "does not exist"),
        (lambda tmp: tmp / "cronpilot.db", "no database at"),
        (
            lambda tmp: (tmp / "notes.txt", (tmp / "notes.txt").write_text("hello " * 1000))[0],
            "file is not a database",
        ),
        (lambda tmp: _other_schema(tmp / "other.db"), "has no cronpilot schema"),
    ],
    ids=["missing folder", "missing file", "not a database", "another schema"],
)
def test_a_database_that_can_never_work_exits_3_with_one_line(
    cli_for: Callable[..., Cli],
    tmp_path: Path,
    database: Callable[[Path], Path],
    says: str,
) -> None:
    path = database(tmp_path)
    existed = path.exists()

    failed = cli_for(_sqlite(path))("scheduler", expect=3, timeout=WAIT_SECONDS)

    assert says in _one_error_line(failed.stderr)
    assert "Traceback" not in failed.stderr
    assert path.exists() == existed


@pytest.mark.postgres
async def test_a_postgres_database_behind_this_build_s_schema_exits_3(
    cli_for: Callable[..., Cli], postgres_url: str
) -> None:
    engine = create_async_engine(postgres_url)
    async with engine.begin() as conn:
        await conn.execute(text("UPDATE alembic_version SET version_num = '0015'"))
    await engine.dispose()

    failed = cli_for(postgres_url)("scheduler", expect=3, timeout=WAIT_SECONDS)

    assert "has schema 0015, this build needs" in _one_error_line(failed.stderr)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _readyz(port: int) -> int | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as refused:
        return refused.code
    except OSError:
        return None


def test_an_unreachable_database_is_waited_for_with_one_warning(
    cli_for: Callable[..., Cli], tmp_path: Path
) -> None:
    # Nothing listens on a port just freed: PostgreSQL "down".
    down = f"postgresql+asyncpg://cronpilot@127.0.0.1:{_free_port()}/cronpilot"
    cli = cli_for(down, CRONPILOT_LOG_LEVEL="DEBUG")
    metrics = _free_port()
    log_path = tmp_path / "scheduler.log"
    with log_path.open("w") as log:
        worker = subprocess.Popen(
            [*SCHEDULER, "--metrics-port", str(metrics)],
            cwd=cli.home,
            env=cli.env,
            stdout=log,
            stderr=log,
        )
    try:
        deadline = time.monotonic() + WAIT_SECONDS
        while _readyz(metrics) is None and time.monotonic() < deadline:
            time.sleep(0.1)
        not_ready = _readyz(metrics)
        # The tries after 0.2, 0.4 and 0.8 s: four of them at least.
        while log_path.read_text().count("store unavailable at start") < 4:
            assert time.monotonic() < deadline and worker.poll() is None
            time.sleep(0.1)
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(WAIT_SECONDS)
    logged = log_path.read_text()

    assert not_ready == 503
    assert worker.returncode == 0, logged
    tries = [line for line in logged.splitlines() if "store unavailable at start" in line]
    assert [" WARNING " in line for line in tries] == [True] + [False] * (len(tries) - 1)
    assert "Traceback" not in logged
