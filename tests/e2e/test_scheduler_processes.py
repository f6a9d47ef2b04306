"""`cronpilot scheduler --processes 2` on PostgreSQL: both worker processes call endpoints, no
slot is called twice, the group's one `/metrics` counts both, a child killed is started again,
and SIGTERM stops them all with exit 0. On SQLite more than one process is refused."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from tests.e2e.conftest import Cli
from tests.e2e.test_scheduler_exits import SCHEDULER

WAIT_SECONDS = 60
ENDPOINTS = 6


class _Counting(BaseHTTPRequestHandler):
    hits = 0
    lock = threading.Lock()

    def do_GET(self) -> None:
        with _Counting.lock:
            _Counting.hits += 1
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"ok": true}')

    def log_message(self, *_args: Any) -> None:
        pass


@pytest.fixture
def endpoint_server() -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Counting)
    _Counting.hits = 0
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _get(port: int, path: str) -> tuple[int, str] | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as answer:
            return int(answer.status), answer.read().decode()
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read().decode()
    except OSError:
        return None


def _wait_for(what: str, check: Callable[[], bool], group: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not check():
        assert group.poll() is None, f"the group exited {group.returncode} waiting for {what}"
        assert time.monotonic() < deadline, f"no {what} within {WAIT_SECONDS} s"
        time.sleep(0.2)


class _Database:
    """Reads of the group's database from the test's thread, each on a connection of its own
    (asyncpg, which the product already needs)."""

    def __init__(self, postgres_url: str) -> None:
        self._dsn = postgres_url.replace("+asyncpg", "")

    def rows(self, query: str) -> list[tuple[Any, ...]]:
        async def read() -> list[tuple[Any, ...]]:
            connection = await asyncpg.connect(self._dsn)
            try:
                return [tuple(row) for row in await connection.fetch(query)]
            finally:
                await connection.close()

        return asyncio.run(read())


def _runs_by_worker(db: _Database) -> dict[str, int]:
    query = "SELECT worker_id, count(*) FROM runs GROUP BY worker_id"
    return {str(worker): int(count) for worker, count in db.rows(query)}


def _pending(db: _Database) -> int:
    return int(db.rows("SELECT count(*) FROM run_queue")[0][0])


def _runs_counted(scraped: tuple[int, str]) -> float:
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in scraped[1].splitlines()
        if line.startswith("cronpilot_runs_total{")
    )


def _workers(port: int) -> dict[str, dict[str, Any]]:
    answer = _get(port, "/readyz")
    if answer is None:
        return {}
    return {worker["worker_id"]: worker for worker in json.loads(answer[1])["workers"]}


@pytest.mark.postgres
def test_two_processes_share_the_slots_and_report_on_one_endpoint(
    cli_for: Callable[..., Cli], postgres_url: str, endpoint_server: int, tmp_path: Path
) -> None:
    cli = cli_for(postgres_url, CRONPILOT_ALLOWED_NETWORKS="127.0.0.1/32", LOGNAME="ann")
    jobs = tmp_path / "jobs.yaml"
    jobs.write_text(
        "jobs:\n  - name: feed\n    endpoints:\n"
        + "".join(
            f"      - name: e{number}\n"
            f"        url: http://127.0.0.1:{endpoint_server}/e{number}\n"
            "        interval: 1s\n"
            for number in range(ENDPOINTS)
        ),
        encoding="utf-8",
    )
    cli("apply", "-f", str(jobs))
    metrics = _free_port()
    log_path = tmp_path / "group.log"
    db = _Database(postgres_url)
    with log_path.open("w") as log:
        group = subprocess.Popen(
            [*SCHEDULER, "--processes", "2", "--metrics-port", str(metrics), "--batch-size", "1"],
            cwd=cli.home,
            env={**cli.env, "CRONPILOT_WORKER_ID": "grp"},
            stdout=log,
            stderr=log,
        )
    try:
        _wait_for(
            "runs by both processes",
            lambda: {"grp-1", "grp-2"} <= set(_runs_by_worker(db)),
            group,
        )
        cli("pause", "feed", "--reason", "count")
        _wait_for("the queue drained", lambda: _pending(db) == 0, group)
        by_worker = _runs_by_worker(db)
        _wait_for(
            "every run counted on /metrics",
            lambda: _runs_counted(_get(metrics, "/metrics") or (0, "")) == sum(by_worker.values()),
            group,
        )
        called = _Counting.hits
        twice = db.rows("SELECT endpoint_id, slot_at FROM runs GROUP BY 1, 2 HAVING count(*) > 1")
        health = _get(metrics, "/healthz")
        ready = _get(metrics, "/readyz")

        cli("resume", "feed")
        killed = _workers(metrics)["grp-1"]["pid"]
        os.kill(killed, signal.SIGKILL)
        _wait_for(
            "grp-1 started again, calling",
            lambda: (
                _workers(metrics)["grp-1"]["pid"] != killed
                and _runs_by_worker(db)["grp-1"] > by_worker["grp-1"]
            ),
            group,
        )
        children = [worker["pid"] for worker in _workers(metrics).values()]
    finally:
        group.send_signal(signal.SIGTERM)
        group.wait(WAIT_SECONDS)
    logged = log_path.read_text()

    assert by_worker["grp-1"] > 0 and by_worker["grp-2"] > 0
    # Each run one call, no slot run twice, and the one endpoint counted both processes' runs.
    assert called == sum(by_worker.values())
    assert twice == []
    assert health == (200, '{"alive":true}')
    assert ready is not None and ready[0] == 200
    assert "worker grp-1 exited with -9" in logged
    assert group.returncode == 0, logged
    assert not [pid for pid in children if _alive(pid)]
    assert "Traceback" not in logged


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_sqlite_refuses_more_than_one_process_with_one_line(
    cli_for: Callable[..., Cli], sqlite_url: str
) -> None:
    refused = cli_for(sqlite_url)("scheduler", "--processes", "2", expect=2)

    [line] = refused.stderr.splitlines()
    assert "more than 1 needs PostgreSQL (SQLite has one writer)" in line
