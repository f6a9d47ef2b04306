"""History at scale: run history of 1M and then 20M runs in one PostgreSQL database (issue 22).

The runs are finished ones (`success`, a small JSON body), written by COPY and spread evenly
over `--days` UTC days ending at today's midnight, over `--endpoints` endpoints; the database
grows from one size to the next (COPY rows/s times the COPY alone; a `VACUUM (ANALYZE)`
follows, as autovacuum would have left the table). At each size it times, `--repeat` times
each (median and p95, ms):

- a claim of `CLAIM_BATCH` endpoints made due (`claim_due`), released and put back after;
- `runs list` as the CLI and the API read it: the newest page of all runs and of one endpoint
  (`page_runs`), and one endpoint's history (`list_runs`);
- the latest run of `CLAIM_BATCH` endpoints (`latest_runs`) and one run by id (`get_run`);

then drops the oldest day (`partitions.drop_before`: one partition) and creates it again, as
housekeeping would create a day ahead, before seeding on. The last row of each table is the
ratio of the largest size to the smallest: reads that scale stay near 1. Pages of one endpoint
compare like with like only once every endpoint has a page of runs (sizes of at least
`PAGE` times `--endpoints`, 500,000 by default).

With `--unbounded` each read is timed a second time as it was before it looked at recent days
first (`adapters.sql.recent_days`), on other endpoints and runs, in the same run.

    python -m bench.history [--sizes 1000000 20000000] [--endpoints 10000] [--days 30]
                            [--repeat 30] [--unbounded]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import itertools
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from datetime import time as clock_time
from typing import Any

import asyncpg
from sqlalchemy import JSON, func, select, text, update

from bench.support import (
    EndpointServer,
    Fleet,
    database,
    now,
    open_store,
    percentile,
    print_header,
    print_table,
    seed,
)
from cronpilot.adapters.sql import SqlStore, recent_days
from cronpilot.adapters.sql.engine import Database
from cronpilot.adapters.sql.partitions import create_ahead, drop_before
from cronpilot.adapters.sql.run_rows import run_values
from cronpilot.adapters.sql.tables import endpoints, runs
from cronpilot.adapters.wake import asyncpg_dsn
from cronpilot.domain.model import Run, RunStatus, RunTrigger, ScheduleSource
from cronpilot.domain.ports import RunFilter

COPY_CHUNK = 100_000
CLAIM_BATCH = 100
PAGE = 50
WORKER = "bench-history"
DAY = timedelta(days=1)
IDLE = timedelta(days=365)
"""How far ahead the seeded endpoints are next due: no claim takes them unless made due."""
COLUMNS = tuple(column.name for column in runs.c)
JSON_COLUMNS = {column.name for column in runs.c if isinstance(column.type, JSON)}
SAMPLED_EVERY = 997
"""Every so many seeded runs, one id is kept for `get_run`."""


@dataclass
class History:
    """The seeded database: its endpoints, the days its runs span and what was written."""

    store: SqlStore
    db: Database
    endpoint_ids: list[str]
    job_id: str
    first_day: date
    days: int
    written: int = 0
    """Runs written so far: the next run's ordinal."""
    kept: int = 0
    """Runs written and not dropped."""
    sampled: list[tuple[str, datetime]] = field(default_factory=list)
    """The id and slot of some of the runs kept, for `get_run`."""

    def slot(self, ordinal: int) -> datetime:
        """Run `ordinal` is endpoint `e = ordinal % endpoints`'s `n = ordinal // endpoints`th
        run, at the van der Corput fraction of `n` shifted by `e / endpoints` (mod 1) of the
        span: any prefix of the ordinals is spread evenly over the days and the endpoints,
        and one endpoint never has two runs in one slot."""
        nth, endpoint = divmod(ordinal, len(self.endpoint_ids))
        fraction, weight = endpoint / len(self.endpoint_ids), 0.5
        while nth:
            nth, bit = divmod(nth, 2)
            fraction += bit * weight
            weight /= 2
        start = datetime.combine(self.first_day, clock_time(), UTC)
        return start + timedelta(seconds=int(fraction % 1.0 * self.days * DAY.total_seconds()))


def template_run(job_id: str) -> tuple[Any, ...]:
    """A finished run's values in `runs`' column order, JSON as text for COPY."""
    at = now()
    run = Run(
        id="",
        endpoint_id="",
        job_id=job_id,
        trace_id="",
        trigger=RunTrigger.SCHEDULE,
        schedule_source=ScheduleSource.BASELINE,
        status=RunStatus.SUCCESS,
        slot_at=at,
        started_at=at,
        worker_id="worker-1",
        finished_at=at,
        status_code=200,
    )
    values = run_values(run)
    return tuple(
        json.dumps(values[name])
        if name in JSON_COLUMNS and values[name] is not None
        else values[name]
        for name in COLUMNS
    )


def run_records(history: History, start: int, stop: int) -> Iterator[tuple[Any, ...]]:
    """Runs `start` to `stop` (`History.slot`) in `runs`' column order."""
    template = list(template_run(history.job_id))
    at = {name: COLUMNS.index(name) for name in COLUMNS}
    ids = history.endpoint_ids
    durations = [timedelta(milliseconds=20 + n) for n in range(180)]
    for ordinal in range(start, stop):
        at_slot = history.slot(ordinal)
        duration = durations[ordinal % 180]
        body = f'{{"ok": true, "n": {ordinal}}}'
        row = template.copy()
        # Random 32-digit hex, as `new_id` makes them, at a third of its cost.
        ids_hex = os.urandom(32).hex()
        row[at["id"]], row[at["trace_id"]] = ids_hex[:32], ids_hex[32:]
        row[at["endpoint_id"]] = ids[ordinal % len(ids)]
        row[at["slot_at"]] = row[at["started_at"]] = at_slot
        row[at["finished_at"]] = at_slot + duration
        row[at["duration_ms"]] = duration.total_seconds() * 1000
        row[at["body"]] = body
        row[at["size_bytes"]] = len(body)
        row[at["body_hash"]] = hashlib.sha256(body.encode()).hexdigest()
        if ordinal % SAMPLED_EVERY == 0:
            history.sampled.append((row[at["id"]], at_slot))
        yield tuple(row)


async def seed_runs(history: History, url: str, total: int) -> float:
    """COPY runs until `total` are kept (a dropped day's are gone); returns rows per second."""
    wanted = max(total - history.kept, 0)
    connection = await asyncpg.connect(asyncpg_dsn(url))
    started = time.perf_counter()
    try:
        records = run_records(history, history.written, history.written + wanted)
        while chunk := list(itertools.islice(records, COPY_CHUNK)):
            await connection.copy_records_to_table("runs", records=chunk, columns=COLUMNS)
        elapsed = time.perf_counter() - started
        # As autovacuum would leave it, so that it does not run while reads are timed.
        await connection.execute("VACUUM (ANALYZE) runs")
    finally:
        await connection.close()
    history.written += wanted
    history.kept += wanted
    return wanted / elapsed if wanted else float("nan")


async def set_due(store: SqlStore, endpoint_ids: Sequence[str], at: datetime) -> None:
    async with store.engine.begin() as conn:
        await conn.execute(
            update(endpoints).where(endpoints.c.id.in_(endpoint_ids)).values(next_run_at=at)
        )


def batch(ids: Sequence[str], n: int) -> list[str]:
    """The `n`th batch of `CLAIM_BATCH` endpoints, wrapping around."""
    offset = n * CLAIM_BATCH % max(len(ids) - CLAIM_BATCH, 1)
    return list(ids[offset : offset + CLAIM_BATCH])


async def claim_times(history: History, repeat: int) -> list[float]:
    """Claims of `CLAIM_BATCH` endpoints made due, a different batch each time; every claim is
    released (its running run deleted) and its endpoint put back to idle, untimed."""
    store, ids = history.store, history.endpoint_ids
    times = []
    for n in range(repeat + 1):
        due = batch(ids, n)
        await set_due(store, due, now())
        started = time.perf_counter()
        claims = await store.claims.claim_due(now(), WORKER, 60.0, CLAIM_BATCH)
        times.append((time.perf_counter() - started) * 1000)
        assert len(claims) == len(due), f"claimed {len(claims)} of {len(due)}"
        for claim in claims:
            await store.claims.release(claim, WORKER)
        await set_due(store, due, now() + IDLE)
    return times[1:]


async def read_times(
    repeat: int, read: Callable[[int], Awaitable[object]], first: int = 0
) -> list[float]:
    """`read(n)` timed `repeat` times from `n = first`, after one untimed call."""
    await read(first + repeat)
    times = []
    for n in range(first, first + repeat):
        started = time.perf_counter()
        await read(n)
        times.append((time.perf_counter() - started) * 1000)
    return times


def unbounded(read: Callable[[int], Awaitable[object]]) -> Callable[[int], Awaitable[object]]:
    """`read` as it was before it looked at recent days first (`recent_days`): every day's
    partition at once."""

    async def every_day(n: int) -> object:
        looks_back = recent_days.LOOKS_BACK
        recent_days.LOOKS_BACK = ()
        try:
            return await read(n)
        finally:
            recent_days.LOOKS_BACK = looks_back

    return every_day


async def measure(history: History, repeat: int, compare: bool) -> dict[str, list[float]]:
    runs_of = history.store.runs
    ids = history.endpoint_ids
    sampled = history.sampled

    def endpoint(n: int) -> str:
        return ids[n * 7919 % len(ids)]

    reads: dict[str, Callable[[int], Awaitable[object]]] = {
        "runs list": lambda n: runs_of.page_runs(RunFilter(), PAGE),
        "runs list, one endpoint": lambda n: runs_of.page_runs(
            RunFilter(endpoint_id=endpoint(n)), PAGE
        ),
        "list_runs": lambda n: runs_of.list_runs(endpoint(n), PAGE),
        f"latest of {CLAIM_BATCH}": lambda n: runs_of.latest_runs(batch(ids, n)),
        "get_run": lambda n: runs_of.get_run(sampled[n * 31 % len(sampled)][0]),
    }
    measured = {f"claim {CLAIM_BATCH}": await claim_times(history, repeat)}
    for name, read in reads.items():
        measured[name] = await read_times(repeat, read)
        if compare:
            # Other endpoints and runs than those just read: neither finds the other's rows
            # in the cache.
            measured[f"{name}, unbounded"] = await read_times(repeat, unbounded(read), repeat + 1)
    return measured


@dataclass(frozen=True, slots=True)
class Step:
    size: int
    seeded_per_second: float
    times: dict[str, list[float]]
    partitions: int
    megabytes: float
    dropped_rows: int
    drop_seconds: float


async def footprint(history: History) -> tuple[int, float]:
    """The partitions of `runs` (DEFAULT among them) and its size with indexes, MB."""
    query = (
        "SELECT count(*) FILTER (WHERE isleaf), sum(pg_total_relation_size(relid))"
        " FROM pg_partition_tree('runs')"
    )
    async with history.store.engine.connect() as conn:
        row = (await conn.execute(text(query))).one()
    return int(row[0]), float(row[1]) / 1e6


async def drop_oldest_day(history: History) -> tuple[int, float]:
    """Drop the oldest seeded day (the rows it held, seconds), then create it again."""
    day = history.first_day
    start = datetime.combine(day, clock_time(), UTC)
    held = select(func.count()).where(runs.c.slot_at >= start, runs.c.slot_at < start + DAY)
    async with history.store.engine.connect() as conn:
        rows = int((await conn.execute(held)).scalar_one())
    started = time.perf_counter()
    dropped, _ = await drop_before(history.db, day + DAY)
    seconds = time.perf_counter() - started
    assert dropped == 1, f"dropped {dropped} partitions, expected the oldest day's alone"
    history.kept -= rows
    history.sampled = [(id_, slot) for id_, slot in history.sampled if slot >= start + DAY]
    await create_ahead(history.db, day, history.days)
    return rows, seconds


async def step(history: History, url: str, size: int, args: argparse.Namespace) -> Step:
    per_second = await seed_runs(history, url, size)
    times = await measure(history, args.repeat, args.unbounded)
    partitions, megabytes = await footprint(history)
    dropped_rows, drop_seconds = await drop_oldest_day(history)
    return Step(size, per_second, times, partitions, megabytes, dropped_rows, drop_seconds)


async def grow(url: str, args: argparse.Namespace) -> list[Step]:
    """Seed the migrated, empty database `url` to each of `args.sizes` in turn, measuring."""
    today = now().date()
    first_day = today - timedelta(days=args.days)
    store = await open_store(url)
    try:
        db = Database(store.engine, url)
        # The endpoints are never called: the server is only where their URLs point.
        await seed(store, EndpointServer(), Fleet(args.endpoints, 3600.0, now() + IDLE, "/h/"))
        async with store.engine.connect() as conn:
            rows = (await conn.execute(select(endpoints.c.id, endpoints.c.job_id))).all()
        # The seeded days, today and tomorrow, as housekeeping would have them.
        await create_ahead(db, first_day, args.days + 2)
        history = History(store, db, [r.id for r in rows], rows[0].job_id, first_day, args.days)
        return [await step(history, url, size, args) for size in sorted(args.sizes)]
    finally:
        await store.close()


async def run(args: argparse.Namespace) -> list[Step]:
    async with database("postgres") as url:
        return await grow(url, args)


def label(size: int) -> str:
    for unit, scale in (("M", 1_000_000), ("k", 1_000)):
        if size >= scale and size % scale == 0:
            return f"{size // scale}{unit}"
    return f"{size:,}"


def report(steps: Sequence[Step], args: argparse.Namespace) -> None:
    first, last = steps[0], steps[-1]
    ratio = f"{label(last.size)} / {label(first.size)}"
    names = list(first.times)

    def median(s: Step, name: str) -> float:
        return percentile(s.times[name], 0.5)

    def p95(s: Step, name: str) -> float:
        return percentile(s.times[name], 0.95)

    def cell(s: Step, name: str) -> str:
        return f"{median(s, name):.2f} / {p95(s, name):.2f}"

    rows: list[list[object]] = [[label(s.size), *(cell(s, n) for n in names)] for s in steps]
    if len(steps) > 1:
        rows.append(
            [
                ratio,
                *(
                    f"{median(last, n) / median(first, n):.2f} / {p95(last, n) / p95(first, n):.2f}"
                    for n in names
                ),
            ]
        )
    print_table(
        f"Claims and reads, ms, median / p95 of {args.repeat}: {args.endpoints:,} endpoints, "
        f"runs over {args.days} days",
        ["runs", *names],
        rows,
    )
    sizes: list[list[object]] = [
        [
            label(s.size),
            s.seeded_per_second,
            s.partitions,
            s.megabytes,
            s.dropped_rows,
            s.drop_seconds,
        ]
        for s in steps
    ]
    if len(steps) > 1:
        sizes.append(
            [
                ratio,
                "",
                "",
                last.megabytes / first.megabytes,
                "",
                last.drop_seconds / first.drop_seconds,
            ]
        )
    print_table(
        "Seeding, size and retention",
        ["runs", "COPY rows/s", "partitions", "runs MB", "oldest day's rows", "drop s"],
        sizes,
    )


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 20_000_000])
    parser.add_argument("--endpoints", type=int, default=10_000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument(
        "--unbounded",
        action="store_true",
        help="time the reads also as they were before they looked at recent days first",
    )
    return parser.parse_args(argv)


def main(argv: list[str]) -> None:
    args = parse(argv)
    print_header("python -m bench.history " + " ".join(argv))
    report(asyncio.run(run(args)), args)


if __name__ == "__main__":
    main(sys.argv[1:])
