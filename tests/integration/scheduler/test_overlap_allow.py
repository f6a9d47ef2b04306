"""A worker on the fake clock under `overlap: allow`: a call that outlasts its interval does
not hold the next slot back, and the lease keeper extends each call's own lease."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from cronpilot.adapters.http.dispatcher import AiohttpDispatcher
from cronpilot.adapters.wake import InProcessWaker
from cronpilot.domain.model import Overlap, RunStatus, Schedule
from cronpilot.domain.ports import Store
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


async def test_the_next_slot_is_called_while_the_last_call_runs_and_both_keep_their_leases(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    every_5s = Schedule(interval_seconds=5)
    held = spec(server, "held", "long", schedule=every_5s, overlap=Overlap.ALLOW)
    await declare(store, clock.now(), held)
    started = clock.now()
    async with RunningWorker(store, dispatcher, clock, waker, lease_seconds=10) as running:
        async with asyncio.timeout(DEADLINE):
            await server.until_in_flight(1)
            await clock.until_sleeping_until(started + timedelta(seconds=5))
            clock.advance(5)
            await server.until_in_flight(2)
            in_flight = sorted(run.slot_at - started for run in await running_runs(store))
            # Past the first run's lease as taken (10 s): the keeper extends each run's own,
            # the first's at 5 s and 10 s, the second's at 10 s.
            clock.advance(6)
            await running.until_called("extend_lease", 3)
            reaped = await store.claims.reap(clock.now())

        server.release.set()
        await running.until_finished(2)

    assert in_flight == [timedelta(0), timedelta(seconds=5)]
    assert reaped == 0
    runs = sorted(await runs_of(store, "long"), key=lambda run: run.slot_at)
    assert [(run.slot_at - started, run.status) for run in runs[:2]] == [
        (timedelta(0), RunStatus.SUCCESS),
        (timedelta(seconds=5), RunStatus.SUCCESS),
    ]
    assert all(run.status is not RunStatus.SKIPPED for run in runs)
