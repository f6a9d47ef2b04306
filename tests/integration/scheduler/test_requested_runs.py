"""Runs asked for by hand, made by a worker: a manual run wakes a sleeping worker and is called
at once; a backfill is called slot by slot at its pace; neither moves the schedule."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from cronpilot.adapters.http.dispatcher import AiohttpDispatcher
from cronpilot.adapters.wake import InProcessWaker
from cronpilot.domain.model import RunStatus, RunTrigger
from cronpilot.domain.ports import Store
from cronpilot.usecases.run_requests import request_backfill, request_run
from tests.integration.scheduler.builders import DEADLINE, RunningWorker, declare, runs_of, spec
from tests.integration.scheduler.endpoint_server import EndpointServer
from tests.support.clock import FakeClock

WHO = "cli:ann@web-1"


async def test_a_manual_run_wakes_the_worker_and_is_called_at_once(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    await declare(store, clock.now(), spec(server, "ok", "a"))
    next_slot = clock.now() + timedelta(seconds=60)

    async with RunningWorker(store, dispatcher, clock, waker) as running:
        await running.until_finished(1)
        async with asyncio.timeout(DEADLINE):
            await clock.until_sleeping_until(next_slot)
        before = await store.catalog.get_endpoint("tests/a")
        asked_at = clock.advance(10)

        queued = await request_run(store.unit_of_work, waker, "tests/a", WHO, clock.now())
        await running.until_finished(2)

    assert server.slots["a"] == [before.last_slot_at, asked_at]
    [manual, scheduled] = await runs_of(store, "a")
    assert (manual.id, manual.trigger, manual.status, manual.slot_at) == (
        queued.id,
        RunTrigger.MANUAL,
        RunStatus.SUCCESS,
        asked_at,
    )
    assert (manual.requested_by, manual.worker_id) == (WHO, "w1")
    assert scheduled.trigger is RunTrigger.SCHEDULE
    after = await store.catalog.get_endpoint("tests/a")
    assert (after.last_slot_at, after.next_run_at, after.failure_count) == (
        before.last_slot_at,
        next_slot,
        0,
    )


async def test_a_backfill_is_called_oldest_slot_first_at_its_pace(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    await declare(store, clock.now(), spec(server, "ok", "a"))
    first_slot = clock.now()

    async with RunningWorker(store, dispatcher, clock, waker) as running:
        await running.until_finished(1)
        clock.advance(30)
        report = await request_backfill(
            store.unit_of_work,
            waker,
            "tests/a",
            start=first_slot - timedelta(minutes=3),
            end=clock.now(),
            max_slots=10,
            actor=WHO,
            now=clock.now(),
        )
        assert (len(report.queued), report.skipped) == (3, 1)
        await running.until_finished(2)
        # One a second: the next one waits for the clock.
        for finished in (3, 4):
            async with asyncio.timeout(DEADLINE):
                await clock.until_sleeping_until(clock.now() + timedelta(seconds=1))
            assert len(server.slots["a"]) == finished - 1
            clock.advance(1)
            await running.until_finished(finished)

    backfilled = [first_slot - timedelta(minutes=n) for n in (3, 2, 1)]
    assert server.slots["a"] == [first_slot, *backfilled]
    runs = await runs_of(store, "a")
    assert [(r.slot_at, r.trigger, r.status) for r in runs] == [
        (first_slot, RunTrigger.SCHEDULE, RunStatus.SUCCESS),
        *((slot, RunTrigger.BACKFILL, RunStatus.SUCCESS) for slot in reversed(backfilled)),
    ]
    endpoint = await store.catalog.get_endpoint("tests/a")
    assert (endpoint.last_slot_at, endpoint.next_run_at) == (
        first_slot,
        first_slot + timedelta(seconds=60),
    )
