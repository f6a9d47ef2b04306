"""The distributed proof: three scheduler processes on one PostgreSQL database, one of them
killed midway. No slot runs twice, the workers stopped by SIGTERM leave nothing running, and
the dead worker's endpoints run again once its leases expire."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

from cronpilot.adapters.sql.run_places import every_run
from cronpilot.adapters.sql.store import SqlStore
from cronpilot.domain.model import RunStatus, Schedule
from tests.integration.scheduler.builders import declare, running_runs, spec
from tests.integration.scheduler.endpoint_server import EndpointServer
from tests.integration.scheduler.processes import SchedulerProcesses, scheduler_processes

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

ENDPOINTS = 200
LEASE_SECONDS = 3.0
GRACE_SECONDS = 2.0
PHASE_DEADLINE = 20.0


@pytest.fixture
async def processes(postgres_url: str, tmp_path: Path) -> AsyncIterator[SchedulerProcesses]:
    async with scheduler_processes(
        postgres_url,
        tmp_path,
        lease_seconds=LEASE_SECONDS,
        reaper_interval_seconds=1,
        grace_seconds=GRACE_SECONDS,
        max_sleep_seconds=1,
        batch_size=50,
        log_level="WARNING",
    ) as made:
        yield made


async def _has_runs_of(store: SqlStore, worker_id: str) -> bool:
    query = select(every_run.c.id).where(every_run.c.worker_id == worker_id).limit(1)
    async with store.engine.connect() as conn:
        return await conn.scalar(query) is not None


async def _next_call(server: EndpointServer) -> None:
    called = len(server.calls)
    await server.until(lambda: len(server.calls) > called)


def _calls_after(server: EndpointServer, name: str, moment: datetime) -> int:
    return sum(slot > moment for slot in server.slots[name])


async def test_three_workers_one_killed_never_run_a_slot_twice(
    store: SqlStore, server: EndpointServer, processes: SchedulerProcesses
) -> None:
    names = [f"e{i:03}" for i in range(ENDPOINTS)]
    every_second = Schedule(interval_seconds=1)
    await declare(
        store,
        datetime.now(UTC),
        *(spec(server, "ok", name, schedule=every_second) for name in names),
    )
    workers = {worker_id: await processes.start(worker_id) for worker_id in ("w1", "w2", "w3")}

    async with asyncio.timeout(PHASE_DEADLINE):
        await server.until(lambda: all(server.calls_of(name) >= 2 for name in names))
        # On a loaded machine w2 may start after the others took every slot: kill it only once
        # it has work of its own, or the kill proves nothing.
        while not await _has_runs_of(store, "w2"):
            await _next_call(server)
    workers["w2"].kill()
    await workers["w2"].wait()
    # Endpoints w2 held come back once the reaper sees its leases expired.
    back_after = datetime.now(UTC) + timedelta(seconds=LEASE_SECONDS)
    async with asyncio.timeout(PHASE_DEADLINE):
        await server.until(lambda: all(_calls_after(server, n, back_after) >= 2 for n in names))

    for worker_id in ("w1", "w3"):
        workers[worker_id].send_signal(signal.SIGTERM)
    for worker_id in ("w1", "w3"):
        code = await processes.exited(workers[worker_id], worker_id, GRACE_SECONDS + 10)
        assert code == 0, processes.log_of(worker_id)
    # A graceful stop leaves nothing running; only the killed worker's runs may still be, until
    # the reaper sees their leases expired.
    left_running = await running_runs(store)
    assert {run.worker_id for run in left_running} <= {"w2"}, left_running
    await store.claims.reap(datetime.now(UTC) + timedelta(seconds=LEASE_SECONDS + 1))
    assert await running_runs(store) == []
    assert max(server.calls.values()) == 1, "a slot was called twice"
    recorded: dict[tuple[str, str], RunStatus] = {}
    recorders: set[str] = set()
    for endpoint in await store.catalog.list_endpoints():
        for run in await store.runs.list_runs(endpoint.id, limit=1000):
            key = (endpoint.name, run.slot_at.isoformat())
            assert key not in recorded, f"two runs of one slot: {key}"
            recorded[key] = run.status
            recorders.add(run.worker_id)
    assert recorders == {"w1", "w2", "w3"}
    # Every call that reached the server belongs to a run (w2's cut-off calls are abandoned
    # ones), and every finished run made exactly one call; a slot that came while its
    # endpoint's call still ran (a loaded machine) is a skipped run, which calls nothing.
    assert set(server.calls) <= set(recorded)
    uncalled = {RunStatus.ABANDONED, RunStatus.SKIPPED}
    finished = {key for key, status in recorded.items() if status not in uncalled}
    assert finished <= set(server.calls)
    for name in names:
        successes_after_kill = [
            slot
            for (called, slot), status in recorded.items()
            if called == name
            and status is RunStatus.SUCCESS
            and datetime.fromisoformat(slot) > back_after
        ]
        assert len(successes_after_kill) >= 2, name
