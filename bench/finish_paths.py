"""The fenced finish of a batch three ways on PostgreSQL, alternating in one run (decision 0046):

- `general`: the transaction that locks and reads the batch's endpoints and runs, then writes
  them with two executemany (SQLAlchemy Core, compiled statements cached);
- `statement via SQLAlchemy`: the one statement of `adapters.sql.finish_statement`, its arrays
  sent through SQLAlchemy's connection (`exec_driver_sql`, outside a transaction block);
- `statement via asyncpg`: the same statement on asyncpg's own connection, as the worker sends
  it (`ClaimRepository.finish_many`).

Each round seeds `--endpoints` due endpoints, claims them all, and finishes them in batches of
`--batch` with an answer like the bench server's; the figure is the CPU per finish (this
process: Python and the driver, not the server), with the transactions committed per finish.

    python -m bench.finish_paths [--endpoints 2000] [--batch 100] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta

from sqlalchemy import func, select

from bench.server import DOCUMENT
from bench.support import (
    EndpointServer,
    Fleet,
    committed,
    database,
    now,
    open_store,
    print_header,
    print_table,
    seed,
)
from cronpilot.adapters.sql import SqlStore
from cronpilot.adapters.sql.engine import Database
from cronpilot.adapters.sql.finish_statement import arguments, settled_alone, statement
from cronpilot.adapters.sql.finishes import finish_general
from cronpilot.adapters.sql.tables import runs
from cronpilot.domain.model import Finish, Response, RunStatus

Path = Callable[[SqlStore, Sequence[Finish]], Awaitable[object]]
LEASE_SECONDS = 300.0


async def general(store: SqlStore, batch: Sequence[Finish]) -> object:
    url = store.engine.url.render_as_string(hide_password=False)
    return await finish_general(Database(store.engine, url), None, batch)


async def via_sqlalchemy(store: SqlStore, batch: Sequence[Finish]) -> object:
    settled = settled_alone(batch)
    async with store.engine.connect() as conn:
        await conn.execution_options(isolation_level="AUTOCOMMIT")
        return await conn.exec_driver_sql(statement(), tuple(arguments(batch, settled)))


async def via_asyncpg(store: SqlStore, batch: Sequence[Finish]) -> object:
    return await store.claims.finish_many(batch)


PATHS: dict[str, Path] = {
    "general (SQLAlchemy, reads under lock)": general,
    "statement via SQLAlchemy": via_sqlalchemy,
    "statement via asyncpg": via_asyncpg,
}


async def one_round(path: Path, count: int, batch_size: int) -> tuple[float, float]:
    """CPU µs and committed transactions per finish of `count` claims finished by `path`."""
    async with database("postgres") as url:
        store = await open_store(url)
        try:
            # A server never started: the endpoints are claimed and finished, never called.
            await seed(store, EndpointServer(), Fleet(count, 3600, now(), "/finish/"))
            at = now()
            claims = await store.claims.claim_due(at, "bench", LEASE_SECONDS, count)
            answer = Response(
                200,
                json.loads(DOCUMENT),
                size_bytes=len(DOCUMENT),
                started_at=at,
                finished_at=at + timedelta(milliseconds=3),
            )
            finishes = [
                Finish(claim, "bench", answer, at + timedelta(seconds=1), LEASE_SECONDS)
                for claim in claims
            ]
            await store.engine.dispose()
            before = await committed(url)
            cpu = time.process_time()
            for start in range(0, len(finishes), batch_size):
                await path(store, finishes[start : start + batch_size])
            cpu = time.process_time() - cpu
            await store.engine.dispose()
            commits = await committed(url) - before
            done = select(func.count()).where(runs.c.status == RunStatus.SUCCESS.value)
            async with store.engine.connect() as conn:
                recorded = int((await conn.execute(done)).scalar_one())
            assert recorded == count, f"{recorded} of {count} finishes recorded"
        finally:
            await store.close()
    return cpu / count * 1e6, commits / count


async def main(args: argparse.Namespace) -> None:
    cpu: dict[str, list[float]] = {name: [] for name in PATHS}
    commits: dict[str, list[float]] = {name: [] for name in PATHS}
    for _ in range(args.rounds):
        for name, path in PATHS.items():
            us, per_finish = await one_round(path, args.endpoints, args.batch)
            cpu[name].append(us)
            commits[name].append(per_finish)
    base = statistics.median(cpu["general (SQLAlchemy, reads under lock)"])
    rows = [
        (
            name,
            statistics.median(cpu[name]),
            statistics.median(cpu[name]) / base,
            statistics.median(commits[name]),
        )
        for name in PATHS
    ]
    print_table(
        f"Finishing {args.endpoints:,} claims in batches of {args.batch}, "
        f"medians of {args.rounds} alternating rounds",
        ["path", "CPU µs per finish", "× general", "commits per finish"],
        rows,
    )


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--endpoints", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    return parser.parse_args(argv)


if __name__ == "__main__":
    arguments_given = parse(sys.argv[1:])
    print_header("python -m bench.finish_paths " + " ".join(sys.argv[1:]))
    asyncio.run(main(arguments_given))
