"""Cancelling a run by hand (`runs cancel`, issue 25), driven by the fake clock: a queued run
never starts; a running one is cut short by the worker that holds it, whichever of several it
is, at its next look at the store's cancel marks, and recorded `cancelled`."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from cronpilot.adapters.http.dispatcher import AiohttpDispatcher
from cronpilot.adapters.wake import InProcessWaker
from cronpilot.domain.errors import RunFinished
from cronpilot.domain.model import Pause, RunStatus
from cronpilot.domain.ports import Store
from cronpilot.usecases.run_control import cancel_run
from cronpilot.usecases.run_requests import request_run
from tests.integration.scheduler.builders import (
    DEADLINE,
    RunningWorker,
    declare,
    running_runs,
    runs_of,
    spec,
)
from tests.integration.scheduler.endpoint_server import EndpointServer
from tests.support.clock import FakeClock
from tests.support.scheduling import set_pause

ADMIN = "cli:ann@web-1"
POLL = 1.0


async def test_a_running_run_is_cut_by_whichever_worker_holds_it_and_recorded_cancelled(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    await declare(store, clock.now(), spec(server, "hang", "stuck", timeout_seconds=600))
    start = clock.now()
    workers = [
        RunningWorker(
            store,
            dispatcher,
            clock,
            waker,
            worker_id=f"w{n}",
            lease_seconds=600,
            cancel_poll_seconds=POLL,
        )
        for n in (1, 2)
    ]
    async with workers[0], workers[1]:
        async with asyncio.timeout(DEADLINE):
            await server.until_in_flight(1)
            [running] = await running_runs(store)
            asked = await cancel_run(store.unit_of_work, running.id[:8], ADMIN, clock.now())
            # Both cancel watches sleep until their next look.
            await clock.until_sleeping_until(start + timedelta(seconds=POLL), sleepers=2)
            assert (await store.runs.get_run(running.id)).status is RunStatus.RUNNING
            clock.advance(POLL)
            holder = next(w for w in workers if w.worker.stats.claimed)
            await holder.until_called("cancel", 1)

    assert (asked.status, asked.cancel_requested_by) == (RunStatus.RUNNING, ADMIN)
    [cancelled] = await runs_of(store, "stuck")
    assert cancelled.status is RunStatus.CANCELLED
    assert cancelled.error_message == f"cancelled by {ADMIN} while running"
    assert cancelled.finished_at == start + timedelta(seconds=POLL)
    endpoint = await store.catalog.get_endpoint("tests/stuck")
    assert endpoint.lease_owner is None
    assert endpoint.next_run_at == cancelled.slot_at + timedelta(seconds=60)
    assert holder.worker.stats.cancelled == 1
    with pytest.raises(RunFinished, match="has finished \\(cancelled\\): nothing to cancel"):
        await cancel_run(store.unit_of_work, running.id, ADMIN, clock.now())


async def test_a_queued_run_cancelled_never_starts(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    # Paused: only the runs asked for by hand go out.
    await declare(store, clock.now(), spec(server, "ok", "quiet"))
    endpoint = await store.catalog.get_endpoint("tests/quiet")
    await set_pause(store.catalog, endpoint.id, Pause("by hand only"), clock.now())
    first = await request_run(store.unit_of_work, waker, "tests/quiet", ADMIN, clock.now())
    clock.advance(1)
    second = await request_run(store.unit_of_work, waker, "tests/quiet", ADMIN, clock.now())

    cancelled = await cancel_run(store.unit_of_work, first.id, ADMIN, clock.now())
    async with RunningWorker(store, dispatcher, clock, waker) as running:
        await running.until_finished(1)

    assert (cancelled.status, cancelled.finished_at) == (RunStatus.CANCELLED, clock.now())
    assert (await store.runs.get_run(first.id)).status is RunStatus.CANCELLED
    assert (await store.runs.get_run(second.id)).status is RunStatus.SUCCESS
    assert server.calls_of("quiet") == 1
