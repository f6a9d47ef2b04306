"""`runs cancel` across processes (issue 25): two scheduler processes on one PostgreSQL
database each hold hanging calls; cancelling them, from the CLI or any other process, has each
cut short and recorded `cancelled` by the worker that holds it, through the store alone."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from cronpilot.adapters.sql.store import SqlStore
from cronpilot.domain.model import RunStatus
from cronpilot.usecases.run_control import cancel_run
from tests.integration.scheduler.builders import declare, running_runs, runs_of, spec
from tests.integration.scheduler.endpoint_server import EndpointServer
from tests.integration.scheduler.processes import SchedulerProcesses, scheduler_processes

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

DEADLINE = 30.0
"""Generous for a loaded machine; the workers look every `cancel_poll_seconds` (0.5 s)."""


@pytest.fixture
async def processes(postgres_url: str, tmp_path: Path) -> AsyncIterator[SchedulerProcesses]:
    async with scheduler_processes(
        postgres_url, tmp_path, concurrency=2, max_sleep_seconds=1, log_level="WARNING"
    ) as made:
        yield made


async def test_each_worker_cuts_the_runs_it_holds_when_they_are_cancelled(
    store: SqlStore, server: EndpointServer, processes: SchedulerProcesses
) -> None:
    names = [f"stuck{n}" for n in range(4)]
    await declare(
        store,
        datetime.now(UTC),
        *(spec(server, "hang", name, timeout_seconds=600) for name in names),
    )
    async with asyncio.timeout(DEADLINE):
        # Two calls each (concurrency 2): the first worker holds two, the second the others.
        await processes.start("w1")
        await server.until_in_flight(2)
        await processes.start("w2")
        await server.until_in_flight(4)
        running = await running_runs(store)
        code, out, err = await processes.cli_output("runs", "cancel", running[0].id)
        for run in running[1:]:
            await cancel_run(store.unit_of_work, run.id, "cli:ann@web-1", datetime.now(UTC))
        while await running_runs(store):  # noqa: ASYNC110 (another process writes it)
            await asyncio.sleep(0.1)

    assert code == 0, out + err
    assert out.startswith(f"asked to cancel run {running[0].id}")
    assert {run.worker_id for run in running} == {"w1", "w2"}
    for name in names:
        [run] = await runs_of(store, name)
        assert run.status is RunStatus.CANCELLED, processes.log_of(run.worker_id)
        assert run.error_message is not None and run.error_message.endswith("while running")
