"""cronpilot through PgBouncer in transaction pooling mode (`?pgbouncer=true`): the store's
flows on many concurrent connections, the planner's claim, scheduler processes with a run
requested from the CLI, and wake-ups, which cannot LISTEN through it."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
import pytest
from sqlalchemy.engine import make_url

from cronpilot.adapters.sql import open_sql_store
from cronpilot.adapters.wake import PostgresWaker
from cronpilot.domain.errors import StoreUnavailable
from cronpilot.domain.model import Response, RunStatus, Schedule
from cronpilot.planner.heuristic import HeuristicAnalyst
from cronpilot.usecases.run_requests import request_run
from tests.integration.planner.builders import declare as planned
from tests.integration.planner.builders import make_planner
from tests.integration.planner.builders import spec as planned_spec
from tests.integration.scheduler.builders import declare, running_runs, spec
from tests.integration.scheduler.endpoint_server import EndpointServer
from tests.integration.scheduler.processes import SchedulerProcesses
from tests.support.clock import FakeClock
from tests.support.finishing import finish_one
from tests.support.pgbouncer import pgbouncer, pgbouncer_missing

pytestmark = pytest.mark.postgres

CONCURRENT = 20
"""Tasks sharing the store at once: more than PgBouncer's server connections per database
(10), so that each transaction may land on another server connection."""
OK = Response(status_code=200, body={"ok": True}, body_hash="h")
PHASE_DEADLINE = 30.0


@pytest.fixture
async def pooled_url(postgres_url: str, tmp_path: Path) -> AsyncIterator[str]:
    missing = pgbouncer_missing()
    if missing is not None:
        if os.environ.get("CRONPILOT_REQUIRE_POSTGRES") == "1":
            pytest.fail(missing)
        pytest.skip(missing)
    async with pgbouncer(postgres_url, tmp_path / "pgbouncer") as url:
        yield url


async def test_the_store_s_flows_run_through_pgbouncer(pooled_url: str) -> None:
    store = await open_sql_store(pooled_url)
    clock = FakeClock(datetime.now(UTC).replace(microsecond=0))
    try:
        names = [f"e{i:02}" for i in range(CONCURRENT)]
        await planned(store, clock.now(), *(planned_spec(name) for name in names))

        async def claim_and_finish(worker_id: str) -> int:
            finished = 0
            while claims := await store.claims.claim_due(clock.now(), worker_id, 60, 1):
                async with store.reading() as tx:
                    await tx.catalog.get_endpoint(claims[0].endpoint.id)
                await finish_one(store.claims, claims[0], worker_id, OK, clock.now())
                finished += 1
            return finished

        counts = await asyncio.gather(*(claim_and_finish(f"w{i}") for i in range(CONCURRENT)))
        clock.advance(1)
        waker = PostgresWaker(pooled_url)
        try:
            requested = await request_run(store.unit_of_work, waker, "j/e00", "ann", clock.now())
        finally:
            await waker.close()
        [again] = await store.claims.claim_due(clock.now(), "w0", 60, 10)
        await finish_one(store.claims, again, "w0", OK, clock.now())
        planner = make_planner(
            store,
            HeuristicAnalyst(),
            clock,
            planner_batch_size=CONCURRENT,
            planner_keep_quiet_sessions=True,
        )
        await planner.run_round()
        runs = [
            run
            for endpoint in await store.catalog.list_endpoints()
            for run in await store.runs.list_runs(endpoint.id, limit=10)
        ]
        sessions = await store.planner.list_sessions(None, limit=100)
    finally:
        await store.close()

    assert sum(counts) == CONCURRENT
    assert again.run_id == requested.id
    assert len(runs) == CONCURRENT + 1
    assert all(run.status is RunStatus.SUCCESS for run in runs)
    assert len(sessions) == CONCURRENT


async def test_without_its_parameter_pgbouncer_loses_the_prepared_statements(
    pooled_url: str,
) -> None:
    # The parameter is what makes the flows above work: the driver's cached, named statements
    # outlive the transaction that prepared them. A read prepares its statement on the one
    # server connection PgBouncer has; another client then holds that one in a transaction, so
    # the same read again goes to a new server connection, which never saw the statement.
    await _read_twice_around_a_held_server(pooled_url)
    with pytest.raises(StoreUnavailable, match="prepared statement"):
        await _read_twice_around_a_held_server(pooled_url.replace("?pgbouncer=true", ""))


async def _read_twice_around_a_held_server(url: str) -> None:
    store = await open_sql_store(url)
    through = make_url(url)
    holder = await asyncpg.connect(
        host=through.host, port=through.port, user=through.username, database=through.database
    )
    try:
        await store.catalog.list_endpoints()
        async with holder.transaction():
            await holder.execute("SELECT 1")
            await store.catalog.list_endpoints()
    finally:
        await holder.close()
        await store.close()


async def test_wake_ups_listen_straight_and_notify_through_pgbouncer(
    pooled_url: str, postgres_url: str
) -> None:
    notifier = PostgresWaker(pooled_url)
    listener = PostgresWaker(postgres_url)
    polling = PostgresWaker(pooled_url)
    try:
        await listener.listen()
        await polling.listen()
        await notifier.notify()
        assert await listener.wait(PHASE_DEADLINE) is True
        # Through PgBouncer nothing is heard from elsewhere: its schedulers poll.
        assert await polling.wait(0) is False
        # What this process notifies, it hears.
        await polling.notify()
        assert await polling.wait(0) is True
    finally:
        for waker in (notifier, listener, polling):
            await waker.close()


@pytest.mark.slow
async def test_scheduler_processes_and_a_run_requested_by_the_cli_through_pgbouncer(
    pooled_url: str, postgres_url: str, server: EndpointServer, tmp_path: Path
) -> None:
    processes = SchedulerProcesses(
        pooled_url,
        tmp_path,
        database_listen_url=postgres_url,
        lease_seconds=5,
        grace_seconds=2,
        max_sleep_seconds=1,
        batch_size=10,
        log_level="WARNING",
    )
    store = await open_sql_store(pooled_url, processes.cipher)
    try:
        names = [f"e{i:02}" for i in range(CONCURRENT)]
        every_second = Schedule(interval_seconds=1)
        await declare(
            store,
            datetime.now(UTC),
            *(spec(server, "ok", name, schedule=every_second) for name in names),
            spec(server, "ok", "manual", schedule=Schedule(interval_seconds=3600)),
        )
        workers = [await processes.start(worker_id) for worker_id in ("w1", "w2")]
        async with asyncio.timeout(PHASE_DEADLINE):
            await server.until(lambda: all(server.calls_of(name) >= 2 for name in names))
            called = server.calls_of("manual")
            code, out, err = await processes.cli_output(
                "run", "tests/manual", "--wait", "--timeout", "20s"
            )
        assert code == 0, err
        assert "success" in out
        assert server.calls_of("manual") == called + 1
        for worker in workers:
            worker.send_signal(signal.SIGTERM)
        for worker_id, worker in zip(("w1", "w2"), workers, strict=True):
            assert await processes.exited(worker, worker_id, 10) == 0, processes.log_of(worker_id)
        assert await running_runs(store) == []
        recorded = {
            run.worker_id
            for endpoint in await store.catalog.list_endpoints()
            for run in await store.runs.list_runs(endpoint.id, limit=100)
        }
    finally:
        await processes.kill_all()
        await store.close()

    assert max(server.calls.values()) == 1, "a slot was called twice"
    assert recorded <= {"w1", "w2"}
