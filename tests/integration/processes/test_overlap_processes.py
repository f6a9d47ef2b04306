"""`overlap: allow` across processes: two scheduler processes on one PostgreSQL database call
an endpoint whose call (1.5 s) outlasts its interval (1 s). Each worker makes one call at a
time, so two calls in flight at once are one of each worker's, of one endpoint; and the
loopback server never sees one slot called twice."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from cronpilot.adapters.sql.store import SqlStore
from cronpilot.domain.model import EndpointSpec, Overlap, RunStatus, Schedule
from tests.integration.scheduler.builders import declare
from tests.integration.scheduler.endpoint_server import EndpointServer
from tests.integration.scheduler.processes import SchedulerProcesses, scheduler_processes

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

DEADLINE = 40.0
CALLS = 8


@pytest.fixture
async def processes(postgres_url: str, tmp_path: Path) -> AsyncIterator[SchedulerProcesses]:
    settings = {"concurrency": 1, "max_sleep_seconds": 1, "log_level": "WARNING"}
    async with scheduler_processes(postgres_url, tmp_path, **settings) as made:
        yield made


async def test_two_workers_call_one_endpoint_at_once_and_never_one_slot_twice(
    store: SqlStore, server: EndpointServer, processes: SchedulerProcesses
) -> None:
    slow = EndpointSpec(
        name="slow",
        url=server.url("/slow/slow?ms=1500"),
        schedule=Schedule(interval_seconds=1),
        overlap=Overlap.ALLOW,
    )
    [endpoint] = (await declare(store, datetime.now(UTC), slow)).values()
    for worker_id in ("w1", "w2"):
        await processes.start(worker_id)
    async with asyncio.timeout(DEADLINE):
        await server.until_calls("slow", CALLS)
    await processes.kill_all()

    assert server.max_in_flight == 2
    assert max(server.calls.values()) == 1
    runs = await store.runs.list_runs(endpoint.id)
    assert len({run.slot_at for run in runs}) == len(runs) >= CALLS
    assert {run.worker_id for run in runs} == {"w1", "w2"}
    assert all(run.status is not RunStatus.SKIPPED for run in runs)
