"""What every benchmark shares: the endpoint server process, throwaway databases, bulk seeding,
the real scheduler worker wired by the composition root, and the printed tables.

Benchmarks only ever call 127.0.0.1, create and drop their own PostgreSQL databases (server
from `CRONPILOT_BENCH_PG`, default postgres@127.0.0.1:5432, admin database `test`) and use
temporary SQLite files.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import os
import platform
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
from cryptography.fernet import Fernet
from sqlalchemy import func, insert, select
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from cronpilot.adapters.clock import SystemClock
from cronpilot.adapters.crypto import FernetCipher
from cronpilot.adapters.processes import serve_scheduler, settle_worker_heap
from cronpilot.adapters.settings import Settings, load_settings
from cronpilot.adapters.sql import SqlStore, open_sql_store, upgrade_database
from cronpilot.adapters.sql.rows import endpoint_values, job_values
from cronpilot.adapters.sql.tables import endpoints, jobs, runs
from cronpilot.domain.model import Endpoint, EndpointSpec, Job, RunStatus, Schedule, new_id
from cronpilot.domain.ports import Telemetry
from cronpilot.domain.runs.telemetry import NO_TELEMETRY
from cronpilot.domain.runs.transitions import replanned

LOOPBACK = ["127.0.0.1/32"]
DEFAULT_PG = "postgresql://postgres@127.0.0.1:5432/test"
SEED_CHUNK = 2_000
POLL_SECONDS = 0.02
_numbers = itertools.count()


def now() -> datetime:
    return datetime.now(UTC)


class EndpointServer:
    """`python -m bench.server` as a child process, so that the server has a core of its own
    rather than sharing the measured event loop."""

    def __init__(self) -> None:
        self.port = 0
        self._process: asyncio.subprocess.Process | None = None

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    async def stats(self) -> dict[str, int]:
        async with aiohttp.ClientSession() as session, session.get(self.url("/_stats")) as answer:
            result: dict[str, int] = await answer.json()
            return result

    async def __aenter__(self) -> EndpointServer:
        self._process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bench.server",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        assert self._process.stdout is not None
        self.port = int(await self._process.stdout.readline())
        return self

    async def __aexit__(self, *exc: object) -> None:
        process = self._process
        if process is None:
            return
        assert process.stdin is not None
        process.stdin.close()
        await ended(process, 5)


async def ended(process: asyncio.subprocess.Process, seconds: float) -> None:
    """Wait for `process` to exit after it was asked to; kill it after `seconds`."""
    try:
        async with asyncio.timeout(seconds):
            await process.wait()
    except TimeoutError:
        process.kill()
        await process.wait()


def _pg_base() -> Any:
    return make_url(os.environ.get("CRONPILOT_BENCH_PG", DEFAULT_PG))


async def _pg_admin(sql: str) -> None:
    """Run `sql` (CREATE or DROP DATABASE, which refuse a transaction) on the admin database."""
    url = _pg_base().set(drivername="postgresql+asyncpg").render_as_string(hide_password=False)
    engine = create_async_engine(url, isolation_level="AUTOCOMMIT")
    try:
        async with engine.connect() as conn:
            await conn.exec_driver_sql(sql)
    finally:
        await engine.dispose()


async def committed(url: str) -> int:
    """`pg_stat_database.xact_commit` of `url`'s database, read from the admin database: call it
    once the writing backends have exited (dispose the engine), as a backend reports its
    counts when it exits or after idling a while. Read until two reads 0.2 s apart agree."""
    admin = _pg_base().set(drivername="postgresql+asyncpg").render_as_string(hide_password=False)
    engine = create_async_engine(admin, isolation_level="AUTOCOMMIT")
    query = "SELECT xact_commit FROM pg_stat_database WHERE datname = $1"
    last = -1
    try:
        while True:
            async with engine.connect() as conn:
                driver = (await conn.get_raw_connection()).driver_connection
                assert driver is not None
                value = int(await driver.fetchval(query, make_url(url).database))
            if value == last:
                return value
            last = value
            await asyncio.sleep(0.2)
    finally:
        await engine.dispose()


@contextlib.asynccontextmanager
async def database(backend: str) -> AsyncIterator[str]:
    """A migrated, empty database of `backend` (`postgres` or `sqlite`), dropped afterwards;
    yields its SQLAlchemy URL."""
    if backend == "sqlite":
        with tempfile.TemporaryDirectory(prefix="cronpilot-bench-") as folder:
            url = f"sqlite+aiosqlite:///{Path(folder) / 'bench.db'}"
            await upgrade_database(url)
            yield url
        return
    name = f"cronpilot_bench_{os.getpid()}_{next(_numbers)}"
    await _pg_admin(f'CREATE DATABASE "{name}"')
    try:
        url = (
            _pg_base()
            .set(drivername="postgresql+asyncpg", database=name)
            .render_as_string(hide_password=False)
        )
        await upgrade_database(url)
        yield url
    finally:
        await _pg_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def sync_url(url: str) -> str:
    """The same PostgreSQL database for a synchronous driver (APScheduler's job store)."""
    return make_url(url).set(drivername="postgresql+psycopg").render_as_string(hide_password=False)


SECRET_KEY = Fernet.generate_key().decode("ascii")
"""One key per benchmark process: the in-process worker and worker processes share it."""


def bench_settings(url: str, **overrides: Any) -> Settings:
    """Settings as an operator would give them: loopback allowed through `allowed_networks`
    (the address guard still checks every call), quiet logs."""
    values: dict[str, Any] = {
        "database_url": url,
        "allowed_networks": LOOPBACK,
        "secret_key": SECRET_KEY,
        "log_level": "WARNING",
        "worker_id": f"bench-{os.getpid()}",
    }
    return load_settings(**(values | overrides))


async def open_store(url: str) -> SqlStore:
    return await open_sql_store(url, FernetCipher(SECRET_KEY))


@dataclass(frozen=True, slots=True)
class Fleet:
    """Endpoints to seed: `count` of them calling `path_prefix{i}` every `interval_seconds`,
    endpoint i first due at `first_due + i * spread_seconds / count`."""

    count: int
    interval_seconds: float
    first_due: datetime
    path_prefix: str
    spread_seconds: float = 0.0
    job: str = "bench"
    success_when: str | None = None


async def seed(store: SqlStore, server: EndpointServer, fleet: Fleet) -> None:
    """Insert the fleet's rows in bulk through the same row mapping the stores use
    (declaring 100,000 endpoints one `apply` at a time would take longer than the benchmark)."""
    job = Job(fleet.job)
    base = EndpointSpec(
        name="",
        url="",
        schedule=Schedule(interval_seconds=fleet.interval_seconds),
        timeout_seconds=10.0,
        success_when=fleet.success_when,
    )
    async with store.engine.begin() as conn:
        await conn.execute(insert(jobs).values(job_values(job)))
        for start in range(0, fleet.count, SEED_CHUNK):
            rows = []
            for i in range(start, min(start + SEED_CHUNK, fleet.count)):
                spec = replace(base, name=f"e{i}", url=server.url(f"{fleet.path_prefix}{i}"))
                endpoint = replanned(Endpoint(new_id(), job.id, job.name, spec), fleet.first_due)
                due = fleet.first_due + timedelta(seconds=fleet.spread_seconds * i / fleet.count)
                rows.append(endpoint_values(replace(endpoint, next_run_at=due), None))
            await conn.execute(insert(endpoints), rows)


async def recorded_runs(engine: AsyncEngine) -> int:
    query = select(func.count()).select_from(runs).where(runs.c.status != RunStatus.RUNNING.value)
    async with engine.connect() as conn:
        return int((await conn.execute(query)).scalar_one())


async def until_recorded(engine: AsyncEngine, count: int, deadline: float) -> tuple[int, float]:
    """Poll until `count` runs are recorded or `deadline` (monotonic) passes; returns how many
    were recorded and when (monotonic)."""
    while True:
        done = await recorded_runs(engine)
        moment = time.monotonic()
        if done >= count or moment >= deadline:
            return done, moment
        await asyncio.sleep(POLL_SECONDS)


@contextlib.asynccontextmanager
async def scheduler_worker(
    settings: Settings, store: Any, telemetry: Telemetry = NO_TELEMETRY
) -> AsyncIterator[None]:
    """The real scheduler worker (`serve_scheduler`: the SQL store, the aiohttp dispatcher with
    its address guard, the waker and housekeeping) running for the duration of the block, in a
    process settled as `cronpilot scheduler` settles its own, reporting to `telemetry`."""
    settle_worker_heap()
    stop = asyncio.Event()
    task = asyncio.create_task(serve_scheduler(settings, store, SystemClock(), stop, telemetry))
    try:
        yield
    finally:
        stop.set()
        await task


def percentile(values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile (`fraction` in 0..1) of `values`; NaN when empty."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(fraction * len(ordered) + 0.5)))
    return ordered[rank - 1]


def peak_rss_mb(pid: int | str = "self") -> float:
    """The peak resident memory (VmHWM) of a process, in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def machine() -> str:
    cpu = "unknown CPU"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    return (
        f"{os.cpu_count()} cores ({cpu}), Python {platform.python_version()}, "
        f"{platform.system()} {platform.release()}"
    )


def add_backends(parser: argparse.ArgumentParser) -> None:
    """`--backends postgres,sqlite`: the stores to measure cronpilot on, both by default."""
    parser.add_argument(
        "--backends",
        type=lambda text: text.split(","),
        default=["postgres", "sqlite"],
        help="comma-separated: postgres,sqlite",
    )


def print_header(command: str) -> None:
    print(f"date: {now():%Y-%m-%d %H:%M} UTC")
    print(f"machine: {machine()}")
    print(f"command: {command}")
    print()


def print_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    """A Markdown table, ready to paste into the docs."""
    print(f"### {title}")
    print()
    print("| " + " | ".join(headers) + " |")
    print("| " + " | ".join("---" for _ in headers) + " |")
    for row in rows:
        print("| " + " | ".join(_cell(value) for value in row) + " |")
    print()


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:,.1f}" if abs(value) >= 10 else f"{value:.2f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)
