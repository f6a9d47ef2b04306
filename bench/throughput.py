"""Throughput: N endpoints due at once, one scheduler worker, every run and body stored.

Side by side, in the same run and against the same local server: a bare aiohttp client making
the same N calls (the ceiling) and APScheduler 3.11 with its in-memory and its SQLAlchemy
(PostgreSQL) job store, one date job per call.

    python -m bench.throughput [--endpoints 3000] [--concurrency 100] [--batch-size 100]

`--second-pass` makes every endpoint due again once cronpilot's worker has called them all and
measures that pass apart (the steady state: no worker start, no first bodies).
`--metrics-cost` and `--conditions-cost` measure cronpilot alone, without and with Prometheus
metrics or a `success_when` condition on every endpoint, alternating in one run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from sqlalchemy import func, select, text, update
from sqlalchemy.ext.asyncio import AsyncEngine

from bench import peers
from bench.server import DOCUMENT
from bench.support import (
    EndpointServer,
    Fleet,
    add_backends,
    bench_settings,
    committed,
    database,
    now,
    open_store,
    print_header,
    print_table,
    scheduler_worker,
    seed,
    sync_url,
    until_recorded,
)
from cronpilot.adapters.metrics import PrometheusTelemetry
from cronpilot.adapters.sql.tables import endpoints, runs
from cronpilot.adapters.wake import CHANNEL
from cronpilot.domain.model import (
    Claim,
    Endpoint,
    EndpointSpec,
    Recorded,
    Response,
    Run,
    RunStatus,
    RunTrigger,
    Schedule,
    ScheduleSource,
)
from cronpilot.domain.ports import Telemetry
from cronpilot.domain.runs.assertions import judged
from cronpilot.domain.runs.telemetry import NO_TELEMETRY

DEADLINE_SECONDS = 60.0
"""The longest any one contender may take; a slower one is reported with what it did by then."""
PEER_DEADLINE_SECONDS = 20.0
Variant = tuple[dict[str, Any], Callable[[], object]]
"""What a round of cronpilot is given (keyword arguments), and what to do after it."""
Variants = dict[str, Callable[[], Variant]]


async def cronpilot(
    backend: str,
    server: EndpointServer,
    count: int,
    concurrency: int,
    batch_size: int,
    *,
    telemetry: Telemetry = NO_TELEMETRY,
    success_when: str | None = None,
    second_pass: bool = False,
) -> tuple[peers.Measured, int, float | None, peers.Measured | None]:
    """The real worker over `count` due endpoints, reporting to `telemetry`, each endpoint
    judged by `success_when`; returns the measure, how many of the recorded runs stored
    their body (succeeded), on PostgreSQL the transactions committed per run (None on
    SQLite), the bench's own polls aside (they roll back), and with `second_pass` the measure
    of a second pass (`_second_pass`; else None)."""
    async with database(backend) as url:
        store = await open_store(url)
        postgres = backend == "postgres"
        try:
            fleet = Fleet(count, 3600, now(), f"/throughput/{backend}/", success_when=success_when)
            await seed(store, server, fleet)
            await store.engine.dispose()
            before = await committed(url) if postgres else 0
            settings = bench_settings(url, concurrency=concurrency, batch_size=batch_size)
            started, cpu = time.monotonic(), time.process_time()
            steady = None
            async with scheduler_worker(settings, store, telemetry):
                done, ended = await until_recorded(store.engine, count, started + DEADLINE_SECONDS)
                if second_pass:
                    # The first pass ends here (its worker's shutdown not counted), and what
                    # it stored is counted before the second begins.
                    cpu = time.process_time() - cpu
                    after = await committed(url) if postgres else 0
                    with_body = await _with_body(store.engine)
                    steady = await _second_pass(store.engine, count, done, postgres)
            if steady is None:
                cpu = time.process_time() - cpu
                await store.engine.dispose()
                after = await committed(url) if postgres else 0
                with_body = await _with_body(store.engine)
            commits = (after - before) / max(done, 1) if postgres else None
        finally:
            await store.close()
    return peers.Measured(done, ended - started, cpu), with_body, commits, steady


async def _with_body(engine: AsyncEngine) -> int:
    """How many runs recorded so far succeeded with their body stored."""
    stored = select(func.count()).where(
        runs.c.status == RunStatus.SUCCESS.value, runs.c.body.isnot(None)
    )
    async with engine.connect() as conn:
        return int((await conn.execute(stored)).scalar_one())


async def _second_pass(
    engine: AsyncEngine, count: int, first: int, postgres: bool
) -> peers.Measured:
    """Every endpoint due again at once, for the worker that has just called them all: the
    steady state of a worker already running, which the first pass is not. There the worker
    starts (imports, statements compiled, connections opened) inside the measured window, and
    every body is a first body, whose schema the learner saves and whose job's provides edges
    it recomputes; here every module and statement is warm and every body has the shape learnt
    already. The worker is woken as `cronpilot run` wakes it (on SQLite it finds the slots at
    its next look, at most `max_sleep_seconds` later, counted in the seconds). `first`: the runs
    the first pass recorded, fewer than `count` where it ran out of time."""
    started, cpu = time.monotonic(), time.process_time()
    async with engine.begin() as conn:
        await conn.execute(update(endpoints).values(next_run_at=now(), next_slot_at=None))
        if postgres:
            await conn.execute(text(f"NOTIFY {CHANNEL}"))
    done, ended = await until_recorded(engine, first + count, started + DEADLINE_SECONDS)
    return peers.Measured(done - first, ended - started, time.process_time() - cpu)


def telemetry_us_per_run(calls: int = 200_000) -> float:
    """CPU µs of `PrometheusTelemetry.recorded` per run, over 100 endpoints of 10 jobs with
    retries: what metrics add to each run, steadier than a difference of two whole runs."""
    telemetry = PrometheusTelemetry()
    slot = now()
    pairs = []
    for n in range(100):
        spec = EndpointSpec(f"e{n}", f"http://127.0.0.1/{n}", Schedule(interval_seconds=60))
        endpoint = Endpoint(f"id{n}", f"job{n % 10}", f"job{n % 10}", spec)
        claim = Claim(endpoint, "run", slot, "trace", slot, ScheduleSource.BASELINE)
        run = Run(
            id="run",
            endpoint_id=endpoint.id,
            job_id=endpoint.job_id,
            trace_id="trace",
            trigger=RunTrigger.SCHEDULE,
            schedule_source=ScheduleSource.BASELINE,
            status=RunStatus.SUCCESS,
            slot_at=slot,
            started_at=slot,
            worker_id="bench",
            attempt=1 + n % 2,
            duration_ms=12.5,
        )
        pairs.append((claim, Recorded(run, [])))
    started = time.process_time()
    for n in range(calls):
        claim, recorded = pairs[n % 100]
        telemetry.recorded(claim, recorded)
    return (time.process_time() - started) / calls * 1e6


CONDITION = 'body.status == "ok" && body.queue.depth < 100 && status == 200'
"""A `success_when` reading three fields of the bench server's answer; it holds."""


def condition_us_per_run(calls: int = 200_000) -> float:
    """CPU µs of judging one answer of the bench server by `CONDITION` (`domain.runs.assertions`),
    the program compiled once: what a `success_when` adds to each run, alone."""
    spec = EndpointSpec(
        "e", "http://127.0.0.1/e", Schedule(interval_seconds=60.0), success_when=CONDITION
    )
    answer = Response(200, json.loads(DOCUMENT), started_at=now(), finished_at=now())
    assert judged(spec, answer) is answer, "the condition holds"
    started = time.process_time()
    for _ in range(calls):
        judged(spec, answer)
    return (time.process_time() - started) / calls * 1e6


async def alternating(args: argparse.Namespace, variants: Variants, title: str) -> None:
    """cronpilot without and with what `variants` ("off", "on") give it, alternating
    `--rounds` times per backend in this one run, so that the ratio of CPU per run compares
    like with like on a shared machine."""
    rows = []
    async with EndpointServer() as server:
        for backend in args.backends:
            cpu: dict[str, list[float]] = {"off": [], "on": []}
            rate: dict[str, list[float]] = {"off": [], "on": []}
            for _ in range(args.rounds):
                for mode in ("off", "on"):
                    options, after = variants[mode]()
                    measured, _, _, _ = await cronpilot(
                        backend,
                        server,
                        args.endpoints,
                        args.concurrency,
                        args.batch_size,
                        **options,
                    )
                    after()
                    cpu[mode].append(measured.cpu_us_per_call)
                    rate[mode].append(measured.per_second)
            off, on = statistics.median(cpu["off"]), statistics.median(cpu["on"])
            rows.append(
                (
                    backend,
                    args.rounds,
                    statistics.median(rate["off"]),
                    statistics.median(rate["on"]),
                    off,
                    on,
                    on / off,
                )
            )
    print_table(
        f"{title}: {args.endpoints:,} endpoints due at once, medians of {args.rounds} rounds",
        [
            "backend",
            "rounds",
            "runs/s off",
            "runs/s on",
            "CPU µs per run off",
            "CPU µs per run on",
            "× CPU",
        ],
        rows,
    )


async def metrics_cost(args: argparse.Namespace) -> None:
    """Metrics off and on (Prometheus telemetry, scraped once at the end of each round)."""

    def on() -> Variant:
        telemetry = PrometheusTelemetry()
        return {"telemetry": telemetry}, telemetry.exposition

    print(f"Telemetry per recorded run, alone: {telemetry_us_per_run():.2f} µs CPU")
    await alternating(args, {"off": lambda: ({}, _nothing), "on": on}, "Metrics cost")


async def conditions_cost(args: argparse.Namespace) -> None:
    """No condition, then `CONDITION` as every endpoint's `success_when`."""
    print(f"success_when {CONDITION!r} per run, alone: {condition_us_per_run():.2f} µs CPU")
    variants: Variants = {
        "off": lambda: ({}, _nothing),
        "on": lambda: ({"success_when": CONDITION}, _nothing),
    }
    await alternating(args, variants, "success_when cost")


def _nothing() -> None:
    return None


async def main(args: argparse.Namespace) -> None:
    if args.metrics_cost:
        await metrics_cost(args)
        return
    if args.conditions_cost:
        await conditions_cost(args)
        return
    count, concurrency = args.endpoints, args.concurrency
    async with EndpointServer() as server:
        urls = [server.url(f"/peer/{n}") for n in range(count)]
        # Warm the server and the loopback path once, so no contender pays for it alone.
        await peers.bare_aiohttp(urls[: min(count, 500)], concurrency)
        results: list[tuple[str, peers.Measured, int | str, str]] = []
        bare = await peers.bare_aiohttp(urls, concurrency)
        results.append(("bare aiohttp client (nothing stored)", bare, "-", "-"))
        memory = await peers.apscheduler(
            urls, concurrency, peers.memory_store(), PEER_DEADLINE_SECONDS
        )
        results.append(("APScheduler 3.11, in-memory job store", memory, "-", "-"))
        async with database("postgres") as url:
            store = peers.sqlalchemy_store(sync_url(url))
            persistent = await peers.apscheduler(urls, concurrency, store, PEER_DEADLINE_SECONDS)
        results.append(("APScheduler 3.11, SQLAlchemy job store, PostgreSQL", persistent, "-", "-"))
        for backend in args.backends:
            measured, with_body, commits, steady = await cronpilot(
                backend, server, count, concurrency, args.batch_size, second_pass=args.second_pass
            )
            per_run = "-" if commits is None else f"{commits:.3f}"
            name = f"cronpilot, {backend}, runs + bodies stored"
            results.append((name, measured, with_body, per_run))
            if steady is not None:
                results.append(
                    (f"cronpilot, {backend}, second pass (steady state)", steady, "-", "-")
                )
        repeated = (await server.stats())["repeated_slots"]

    rows = [
        (
            name,
            measured.calls,
            measured.seconds,
            measured.per_second,
            measured.per_second / bare.per_second,
            measured.per_second / memory.per_second,
            measured.cpu_us_per_call,
            with_body,
            commits,
        )
        for name, measured, with_body, commits in results
    ]
    print_table(
        f"Throughput: {count:,} endpoints due at once, concurrency {concurrency}",
        [
            "contender",
            "calls",
            "seconds",
            "calls/s",
            "× bare aiohttp",
            "× APScheduler in-memory",
            "CPU µs per call",
            "bodies stored",
            "commits per run",
        ],
        rows,
    )
    print(f"slots called twice: {repeated}")


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--endpoints", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument(
        "--metrics-cost",
        action="store_true",
        help="only cronpilot, metrics off then on, alternating (the 5%% budget of decision 0018)",
    )
    parser.add_argument(
        "--conditions-cost",
        action="store_true",
        help="only cronpilot, without then with a success_when condition, alternating",
    )
    parser.add_argument("--rounds", type=int, default=3, help="off/on pairs for the costs")
    parser.add_argument(
        "--second-pass",
        action="store_true",
        help="after cronpilot's pass, every endpoint due again for the same worker, measured "
        "apart: the steady state, without the worker's start and first bodies",
    )
    add_backends(parser)
    return parser.parse_args(argv)


if __name__ == "__main__":
    arguments = parse(sys.argv[1:])
    print_header("python -m bench.throughput " + " ".join(sys.argv[1:]))
    asyncio.run(main(arguments))
