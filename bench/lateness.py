"""Lateness: 1,000 endpoints every second for a minute on PostgreSQL, one scheduler worker.

Endpoint i is first due i milliseconds after the start, so slots fall due evenly at 1,000 a
second rather than all at the top of each second. For every recorded run: lateness = run
started (the call went out) minus slot due. A slot missed is one with no run: the worker fell so
far behind that the governor coalesced it into the next one.

    python -m bench.lateness [--endpoints 1000] [--duration 60] [--backend postgres]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import sys
from datetime import datetime, timedelta

from sqlalchemy import select

from bench.support import (
    EndpointServer,
    Fleet,
    bench_settings,
    database,
    now,
    open_store,
    percentile,
    print_header,
    print_table,
    scheduler_worker,
    seed,
)
from cronpilot.adapters.sql.tables import runs
from cronpilot.domain.model import RunStatus

LEAD_SECONDS = 2.0
"""Time for the worker to start before the first slot."""
INTERVAL_SECONDS = 1.0


def expected_slots(first_due: datetime, window_end: datetime) -> int:
    """Slots of one endpoint due from `first_due` up to `window_end`."""
    if window_end < first_due:
        return 0
    return math.floor((window_end - first_due).total_seconds() / INTERVAL_SECONDS) + 1


async def main(args: argparse.Namespace) -> None:
    count, duration = args.endpoints, args.duration
    async with EndpointServer() as server, database(args.backend) as url:
        store = await open_store(url)
        try:
            start = now() + timedelta(seconds=LEAD_SECONDS)
            fleet = Fleet(count, INTERVAL_SECONDS, start, "/lateness/", spread_seconds=1.0)
            await seed(store, server, fleet)
            settings = bench_settings(url, concurrency=args.concurrency)
            async with scheduler_worker(settings, store):
                await asyncio.sleep((start - now()).total_seconds() + duration)
            # Slots due in the last second may have been cut off by the stop: not counted.
            window_end = start + timedelta(seconds=duration - INTERVAL_SECONDS)
            query = select(runs.c.slot_at, runs.c.started_at, runs.c.status).where(
                runs.c.slot_at <= window_end, runs.c.status != RunStatus.RUNNING.value
            )
            async with store.engine.connect() as conn:
                recorded = (await conn.execute(query)).all()
        finally:
            await store.close()
        repeated = (await server.stats())["repeated_slots"]

    late_ms = [(started - slot).total_seconds() * 1000 for slot, started, _ in recorded]
    failed = sum(1 for *_, status in recorded if status != RunStatus.SUCCESS.value)
    expected = sum(
        expected_slots(start + timedelta(seconds=i / count), window_end) for i in range(count)
    )
    missed = max(expected - len(recorded), 0)
    print_table(
        f"Lateness: {count:,} endpoints every {INTERVAL_SECONDS:g} s for {duration:g} s, "
        f"{args.backend}, concurrency {args.concurrency}",
        [
            "slots due",
            "runs recorded",
            "runs/s",
            "p50 ms",
            "p95 ms",
            "p99 ms",
            "max ms",
            "missed",
            "fraction missed",
            "failed",
        ],
        [
            (
                expected,
                len(recorded),
                len(recorded) / (duration - INTERVAL_SECONDS),
                percentile(late_ms, 0.50),
                percentile(late_ms, 0.95),
                percentile(late_ms, 0.99),
                max(late_ms, default=float("nan")),
                missed,
                f"{missed / expected:.2%}" if expected else "-",
                failed,
            )
        ],
    )
    print(f"slots called twice: {repeated}")


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--endpoints", type=int, default=1000)
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of slots")
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--backend", choices=["postgres", "sqlite"], default="postgres")
    return parser.parse_args(argv)


if __name__ == "__main__":
    arguments = parse(sys.argv[1:])
    print_header("python -m bench.lateness " + " ".join(sys.argv[1:]))
    asyncio.run(main(arguments))
