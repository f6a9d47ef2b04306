"""Scale: 100,000 endpoints in one PostgreSQL database, most of them idle.

1. Claim latency: 1,000 of them due every second (spread evenly), the rest due tomorrow; the
   real worker runs in this process and every `claim_due` it makes is timed. That includes
   waiting for the worker's own busy event loop, so the statement alone is timed too: claims
   of `QUIET_BATCH` from an otherwise idle process.
2. Worker processes: a burst of endpoints due at one moment, drained by 1, 2 and then 4
   `cronpilot scheduler` processes on the same database (with --group, one
   `cronpilot scheduler --processes N` each round; `--workers 1,2,1,2` alternates): total
   runs/s, each process's peak memory, and proof that no slot ran twice (the server counts
   calls per slot, the database counts runs per slot).

    python -m bench.scale [--endpoints 100000] [--active 1000] [--duration 20] [--burst 6000]
        [--workers 1,2,4] [--group]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import func, select, update

from bench.support import (
    POLL_SECONDS,
    SECRET_KEY,
    EndpointServer,
    Fleet,
    bench_settings,
    database,
    ended,
    now,
    open_store,
    peak_rss_mb,
    percentile,
    print_header,
    print_table,
    scheduler_worker,
    seed,
)
from cronpilot.adapters.sql import SqlStore
from cronpilot.adapters.sql.tables import endpoints, jobs, runs
from cronpilot.domain.model import RunStatus

DAY_SECONDS = 86_400.0
LEAD_SECONDS = 6.0
"""Worker processes start this long before the burst is due: Python and its imports take a
second or two per process on a busy two-core machine."""
BURST_DEADLINE_SECONDS = 60.0
QUIET_BATCH = 5
QUIET_CLAIMS = 150
QUIET_LEASE_SECONDS = 3600.0
"""Longer than the benchmark: no reaper frees the quiet claims while the bursts run."""


@dataclass
class TimedClaims:
    """The store's `ClaimRepository`, with the duration of every `claim_due` recorded."""

    inner: Any
    seconds: list[float] = field(default_factory=list)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def claim_due(self, *args: Any) -> Any:
        started = time.perf_counter()
        try:
            return await self.inner.claim_due(*args)
        finally:
            self.seconds.append(time.perf_counter() - started)


@dataclass
class TimedStore:
    """A `Store` whose claims are timed; every other repository is the store's own."""

    store: SqlStore
    claims: TimedClaims

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    async def close(self) -> None:
        """The wrapped store is closed by its opener."""


async def claim_latency(store: SqlStore, url: str, duration: float) -> list[float]:
    timed = TimedStore(store, TimedClaims(store.claims))
    async with scheduler_worker(bench_settings(url), timed):
        await asyncio.sleep(duration)
    return [seconds * 1000 for seconds in timed.claims.seconds]


async def quiet_claims(store: SqlStore, count: int) -> list[float]:
    """`count` claims of `QUIET_BATCH` due endpoints, one after the other, from this idle
    process; the claims are simply left leased (this database is thrown away)."""
    latencies = []
    for _ in range(count):
        started = time.perf_counter()
        await store.claims.claim_due(now(), "bench-quiet", QUIET_LEASE_SECONDS, QUIET_BATCH)
        latencies.append((time.perf_counter() - started) * 1000)
    return latencies


async def set_next_run(store: SqlStore, job: str, at: datetime) -> None:
    job_id = select(jobs.c.id).where(jobs.c.name == job).scalar_subquery()
    async with store.engine.begin() as conn:
        await conn.execute(
            update(endpoints).where(endpoints.c.job_id == job_id).values(next_run_at=at)
        )


async def start_workers(
    url: str, count: int, folder: Path, *, group: bool = False
) -> list[asyncio.subprocess.Process]:
    """`count` `cronpilot scheduler` processes, or one `--processes count` group of them."""
    env = {
        **os.environ,
        "CRONPILOT_DATABASE_URL": url,
        "CRONPILOT_SECRET_KEY": SECRET_KEY,
        "CRONPILOT_ALLOWED_NETWORKS": "127.0.0.1/32",
        "CRONPILOT_LOG_LEVEL": "WARNING",
    }
    started = []
    for n in range(1 if group else count):
        with (folder / f"worker-{count}-{n}.log").open("wb") as log:
            started.append(
                await asyncio.create_subprocess_exec(
                    sys.executable,
                    "-m",
                    "cronpilot.adapters.cli.main",
                    "scheduler",
                    "--worker-id",
                    f"bench-{count}-{n}",
                    "--processes",
                    str(count if group else 1),
                    cwd=folder,
                    env=env,
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=log,
                    stderr=log,
                )
            )
    return started


async def stop_workers(workers: list[asyncio.subprocess.Process]) -> None:
    for worker in workers:
        if worker.returncode is None:
            worker.send_signal(signal.SIGTERM)
    for worker in workers:
        await ended(worker, 20)


@dataclass(frozen=True, slots=True)
class Burst:
    workers: int
    runs: int
    seconds: float
    slots_run_twice: int
    peak_rss_mb: float

    @property
    def per_second(self) -> float:
        return self.runs / self.seconds


async def burst(
    *,
    store: SqlStore,
    url: str,
    workers: int,
    size: int,
    folder: Path,
    repeated: Callable[[], Coroutine[Any, Any, int]],
    group: bool = False,
) -> Burst:
    """`size` endpoints of job `burst` due at one moment, drained by `workers` processes."""
    due = now() + timedelta(seconds=LEAD_SECONDS)
    await set_next_run(store, "burst", due)
    started = await start_workers(url, workers, folder, group=group)
    try:
        slot_runs = select(func.count()).where(
            runs.c.slot_at == due, runs.c.status != RunStatus.RUNNING.value
        )
        await asyncio.sleep(max((due - now()).total_seconds(), 0))
        began = time.monotonic()
        while True:
            async with store.engine.connect() as conn:
                done = int((await conn.execute(slot_runs)).scalar_one())
            if done >= size or time.monotonic() - began > BURST_DEADLINE_SECONDS:
                break
            await asyncio.sleep(POLL_SECONDS)
        elapsed = time.monotonic() - began
        peak = max(peak_rss_mb(worker.pid) for worker in started)
    finally:
        await stop_workers(started)
    per_slot = (
        select(runs.c.endpoint_id)
        .where(runs.c.slot_at == due)
        .group_by(runs.c.endpoint_id)
        .having(func.count() > 1)
        .subquery()
    )
    async with store.engine.connect() as conn:
        twice = int((await conn.execute(select(func.count()).select_from(per_slot))).scalar_one())
    return Burst(workers, done, elapsed, twice + await repeated(), peak)


async def main(args: argparse.Namespace) -> None:
    idle = args.endpoints - args.active - args.burst
    async with EndpointServer() as server, database("postgres") as url:
        store = await open_store(url)
        try:
            start = now() + timedelta(seconds=2)
            seeding = time.monotonic()
            await seed(
                store,
                server,
                Fleet(
                    idle, DAY_SECONDS, start + timedelta(hours=1), "/idle/", DAY_SECONDS, job="idle"
                ),
            )
            await seed(store, server, Fleet(args.active, 1.0, start, "/active/", 1.0, job="active"))
            await seed(
                store,
                server,
                Fleet(args.burst, 3600.0, start + timedelta(days=2), "/burst/", job="burst"),
            )
            seeded = time.monotonic() - seeding
            async with store.engine.begin() as conn:
                await conn.exec_driver_sql("ANALYZE")
            latencies = await claim_latency(store, url, args.duration)
            quiet = await quiet_claims(store, QUIET_CLAIMS)
            await set_next_run(store, "active", start + timedelta(days=2))

            async def repeated() -> int:
                return (await server.stats())["repeated_slots"]

            with tempfile.TemporaryDirectory(prefix="cronpilot-bench-") as folder:
                bursts = [
                    await burst(
                        store=store,
                        url=url,
                        workers=workers,
                        size=args.burst,
                        folder=Path(folder),
                        repeated=repeated,
                        group=args.group,
                    )
                    for workers in args.workers
                ]
        finally:
            await store.close()

    print(f"seeded {args.endpoints:,} endpoints in {seeded:.1f} s")
    print()
    print_table(
        f"Claim latency: {args.endpoints:,} endpoints, {args.active:,} due every second, "
        f"one worker, {args.duration:g} s",
        ["claimer", "claims", "p50 ms", "p99 ms", "max ms"],
        [
            (name, len(times), percentile(times, 0.5), percentile(times, 0.99), max(times))
            for name, times in (
                ("the running worker (its own event loop busy with calls)", latencies),
                (f"the claim alone, {QUIET_BATCH} at a time, from an idle process", quiet),
            )
        ],
    )
    single = bursts[0].per_second
    print_table(
        f"Worker processes: {args.burst:,} endpoints due at once among {args.endpoints:,}",
        [
            "processes",
            "runs",
            "seconds",
            "runs/s",
            "× one process",
            "peak RSS per process MB",
            "slots run twice",
        ],
        [
            (
                b.workers,
                b.runs,
                b.seconds,
                b.per_second,
                b.per_second / single,
                b.peak_rss_mb,
                b.slots_run_twice,
            )
            for b in bursts
        ],
    )


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--endpoints", type=int, default=100_000)
    parser.add_argument("--active", type=int, default=1_000, help="due every second")
    parser.add_argument("--duration", type=float, default=20.0, help="seconds of claim timing")
    parser.add_argument("--burst", type=int, default=6_000, help="due at once, per round")
    parser.add_argument(
        "--workers", type=lambda text: [int(n) for n in text.split(",")], default=[1, 2, 4]
    )
    parser.add_argument(
        "--group",
        action="store_true",
        help="each round one `cronpilot scheduler --processes N` instead of N processes",
    )
    return parser.parse_args(argv)


if __name__ == "__main__":
    arguments = parse(sys.argv[1:])
    print_header("python -m bench.scale " + " ".join(sys.argv[1:]))
    asyncio.run(main(arguments))
