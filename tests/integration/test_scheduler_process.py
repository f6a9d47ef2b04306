"""`cronpilot scheduler` as a process: records runs, wakes for `cronpilot resume` from another
process, and on SIGTERM stops cleanly in grace."""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from cronpilot.adapters.bootstrap import sqlite_file
from cronpilot.adapters.sql import open_sql_store
from cronpilot.adapters.wake import wake_folder
from cronpilot.domain.model import ErrorKind, Pause, RunStatus, Schedule
from cronpilot.domain.ports import Store
from tests.integration.scheduler.builders import declare, running_runs, runs_of, spec
from tests.integration.scheduler.endpoint_server import EndpointServer
from tests.integration.scheduler.processes import SchedulerProcesses
from tests.support.proxy import CuttableProxy
from tests.support.scheduling import set_pause

GRACE_SECONDS = 1.0
STARTUP_DEADLINE = 20.0
MAX_SLEEP_SECONDS = 30.0
"""Far longer than `WAKE_DEADLINE`: a run within it was woken, not the end of a nap."""
WAKE_DEADLINE = 5.0
STOP_DEADLINE = GRACE_SECONDS + 10
"""How long a signalled worker may take to exit before the test calls it hung; how long a
clean stop takes is measured where that is the point."""


@pytest.fixture
async def processes(sqlite_url: str, tmp_path: Path) -> AsyncIterator[SchedulerProcesses]:
    made = SchedulerProcesses(
        sqlite_url, tmp_path, grace_seconds=GRACE_SECONDS, max_sleep_seconds=MAX_SLEEP_SECONDS
    )
    try:
        yield made
    finally:
        await made.kill_all()


@pytest.fixture
async def store(sqlite_url: str, processes: SchedulerProcesses) -> AsyncIterator[Store]:
    opened = await open_sql_store(sqlite_url, processes.cipher)
    try:
        yield opened
    finally:
        await opened.close()


async def test_scheduler_records_runs_and_stops_cleanly_on_sigterm(
    store: Store, server: EndpointServer, processes: SchedulerProcesses
) -> None:
    every_second = Schedule(interval_seconds=1)
    await declare(
        store,
        datetime.now(UTC),
        *(spec(server, "ok", f"tick{i}", schedule=every_second) for i in range(3)),
        spec(server, "hang", "stuck", schedule=every_second),
    )
    worker = await processes.start("proc-1")
    async with asyncio.timeout(STARTUP_DEADLINE):
        for i in range(3):
            await server.until_calls(f"tick{i}", 3)
        await server.until_in_flight(1)

    worker.send_signal(signal.SIGTERM)
    signalled = time.monotonic()
    assert await processes.exited(worker, "proc-1", STOP_DEADLINE) == 0, processes.log_of("proc-1")
    assert time.monotonic() - signalled < GRACE_SECONDS + 3

    assert await running_runs(store) == []
    for i in range(3):
        runs = await runs_of(store, f"tick{i}")
        assert [run.status for run in runs].count(RunStatus.SUCCESS) >= 3
        assert {run.worker_id for run in runs} == {"proc-1"}
    [stuck] = await runs_of(store, "stuck")
    assert (stuck.status, stuck.error_kind) == (RunStatus.ABANDONED, ErrorKind.SHUTDOWN)
    assert "scheduler proc-1 stopped" in processes.log_of("proc-1")


async def test_a_sleeping_scheduler_runs_an_endpoint_at_once_when_another_process_resumes_it(
    sqlite_url: str, store: Store, server: EndpointServer, processes: SchedulerProcesses
) -> None:
    hourly = Schedule(interval_seconds=3600)
    endpoints = await declare(
        store,
        datetime.now(UTC),
        spec(server, "ok", "first", schedule=hourly),
        spec(server, "ok", "paused", schedule=hourly),
    )
    await set_pause(store.catalog, endpoints["paused"].id, Pause("by hand"), datetime.now(UTC))
    worker = await processes.start("proc-2")
    # The scheduler listens for wake-ups before it claims: once it has called `first`, it
    # can be woken, and nothing else is due for an hour.
    async with asyncio.timeout(STARTUP_DEADLINE):
        await server.until_calls("first")

    assert await processes.cli("resume", "tests/paused") == 0, processes.log_of("cli")
    resumed = time.monotonic()
    async with asyncio.timeout(WAKE_DEADLINE):
        await server.until_calls("paused")
    assert time.monotonic() - resumed < WAKE_DEADLINE

    worker.send_signal(signal.SIGTERM)
    assert await processes.exited(worker, "proc-2", STOP_DEADLINE) == 0, processes.log_of("proc-2")
    [run] = await runs_of(store, "paused")
    assert run.status is RunStatus.SUCCESS
    database = sqlite_file(sqlite_url)
    assert database is not None
    assert list(wake_folder(database).glob("*.sock")) == [], "a socket outlived its scheduler"


async def _until_in_log(processes: SchedulerProcesses, worker_id: str, text: str) -> None:
    # Another process writes the log: there is nothing to await but the file.
    while text not in processes.log_of(worker_id):  # noqa: ASYNC110
        await asyncio.sleep(0.1)


@pytest.mark.postgres
async def test_a_scheduler_started_before_its_database_waits_for_it(
    tmp_path: Path, server: EndpointServer, postgres_url: str
) -> None:
    """PostgreSQL answers only after the worker started (a proxy in front of it, cut at
    first): the worker tries again, one warning for the outage and no traceback, and runs
    endpoints once it can."""
    database = make_url(postgres_url)
    async with CuttableProxy(database.port or 5432) as proxy:
        proxy.cut = True
        url = database.set(port=proxy.port).render_as_string(hide_password=False)
        processes = SchedulerProcesses(
            url, tmp_path, grace_seconds=GRACE_SECONDS, max_sleep_seconds=0.5, log_level="DEBUG"
        )
        try:
            worker = await processes.start("early")
            async with asyncio.timeout(STARTUP_DEADLINE):
                await _until_in_log(processes, "early", "retrying in 0.4 s")
            proxy.cut = False
            store = await open_sql_store(postgres_url, processes.cipher)
            try:
                await declare(store, datetime.now(UTC), spec(server, "ok", "first"))
                async with asyncio.timeout(STARTUP_DEADLINE):
                    await server.until_calls("first")
            finally:
                await store.close()
            worker.send_signal(signal.SIGTERM)
            assert await processes.exited(worker, "early", STOP_DEADLINE) == 0, processes.log_of(
                "early"
            )
        finally:
            await processes.kill_all()

    log = processes.log_of("early")
    unavailable = [line for line in log.splitlines() if "store unavailable at start" in line]
    assert " WARNING " in unavailable[0]
    assert "cannot reach the database" in unavailable[0]
    assert not any(" WARNING " in line for line in unavailable[1:])
    assert "store reachable after" in log
    assert "Traceback" not in log


async def test_a_scheduler_waiting_for_its_database_stops_at_once_on_sigterm(
    tmp_path: Path,
) -> None:
    # Nothing listens on a port just freed: a PostgreSQL server that is down.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"postgresql+asyncpg://cronpilot@127.0.0.1:{port}/cronpilot"
    processes = SchedulerProcesses(url, tmp_path, max_sleep_seconds=60, log_level="DEBUG")
    try:
        worker = await processes.start("waiting")
        async with asyncio.timeout(STARTUP_DEADLINE):
            await _until_in_log(processes, "waiting", "retrying in 1.6 s")
        worker.send_signal(signal.SIGTERM)
        assert await processes.exited(worker, "waiting", 2) == 0, processes.log_of("waiting")
    finally:
        await processes.kill_all()
    assert "Traceback" not in processes.log_of("waiting")


async def test_workers_list_shows_each_running_scheduler_with_its_runs_of_the_last_minute(
    store: Store, server: EndpointServer, processes: SchedulerProcesses
) -> None:
    every_second = Schedule(interval_seconds=1)
    await declare(
        store,
        datetime.now(UTC),
        *(spec(server, "ok", f"tick{i}", schedule=every_second) for i in range(4)),
    )
    workers = {name: await processes.start(name) for name in ("proc-a", "proc-b")}
    async with asyncio.timeout(STARTUP_DEADLINE):
        for i in range(4):
            await server.until_calls(f"tick{i}", 3)
    # Stopped workers stay listed until they go stale, and their counts stand still.
    for name, process in workers.items():
        process.send_signal(signal.SIGTERM)
        assert await processes.exited(process, name, STOP_DEADLINE) == 0, processes.log_of(name)

    code, out, err = await processes.cli_output("workers", "list", "--json")

    assert code == 0, err
    listed = {worker["id"]: worker for worker in json.loads(out)}
    assert set(listed) == set(workers)
    runs = [run for i in range(4) for run in await runs_of(store, f"tick{i}")]
    for name, process in workers.items():
        assert listed[name]["host"] == socket.gethostname()
        assert listed[name]["pid"] == process.pid
        assert listed[name]["version"] == version("cronpilot")
        assert listed[name]["runs_last_minute"] == sum(run.worker_id == name for run in runs)
    assert sum(worker["runs_last_minute"] for worker in listed.values()) == len(runs) >= 12
    code, out, err = await processes.cli_output("workers", "list")
    assert code == 0, err
    assert "proc-a" in out and "proc-b" in out
