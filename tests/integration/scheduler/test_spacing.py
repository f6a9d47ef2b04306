"""The worker with jitter and catch-up, driven by the fake clock: a jittered slot is called at
its offset and recorded under its grid time; after downtime the missed slots become one run on
the grid (`catch_up: one`) or none (`catch_up: none`)."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from cronpilot.adapters.http.dispatcher import AiohttpDispatcher
from cronpilot.adapters.wake import InProcessWaker
from cronpilot.domain.model import CatchUp, RunStatus
from cronpilot.domain.ports import Store
from cronpilot.domain.schedule.jitter import jittered
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

MINUTE = timedelta(seconds=60)


async def test_a_jittered_slot_is_called_at_its_offset_under_its_grid_slot(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    slot = clock.now()
    endpoints = await declare(store, slot, spec(server, "ok", "spread", jitter_seconds=50.0))
    call = jittered(
        endpoints["spread"].id, slot, slot + MINUTE, timedelta(seconds=50), timedelta(seconds=1)
    )
    # Claimed ahead, by half the offset: the worker must then wait for the call time, not for
    # the (earlier) grid slot.
    ahead = timedelta(milliseconds=(call - slot) // timedelta(milliseconds=2))

    config = {"claim_ahead_seconds": ahead.total_seconds()}
    async with RunningWorker(store, dispatcher, clock, waker, **config) as running:
        async with asyncio.timeout(DEADLINE):
            await clock.until_sleeping_until(call - ahead)
            assert await running_runs(store) == []
            clock.advance((call - ahead - clock.now()).total_seconds())
            await clock.until_sleeping_until(call)
        [waiting] = await running_runs(store)
        assert waiting.slot_at == slot
        assert server.calls_of("spread") == 0

        clock.advance(ahead.total_seconds())
        await running.until_finished(1)

    assert server.calls == {("spread", slot.isoformat()): 1}
    [run] = await runs_of(store, "spread")
    assert (run.status, run.slot_at) == (RunStatus.SUCCESS, slot)
    after = await store.catalog.get_endpoint("tests/spread")
    assert (after.last_slot_at, after.next_slot) == (slot, slot + MINUTE)
    assert after.next_run_at == jittered(
        after.id, slot + MINUTE, slot + 2 * MINUTE, timedelta(seconds=50), timedelta(seconds=1)
    )


async def test_after_downtime_the_missed_slots_become_one_run_on_the_grid(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    start = clock.now()
    await declare(store, start, spec(server, "ok", "minutely"))
    clock.advance(3630)  # no worker for an hour and a half minute

    async with RunningWorker(store, dispatcher, clock, waker) as running:
        await running.until_finished(1)
        async with asyncio.timeout(DEADLINE):
            await clock.until_sleeping_until(start + 61 * MINUTE)

    assert server.calls == {("minutely", (start + 60 * MINUTE).isoformat()): 1}
    [run] = await runs_of(store, "minutely")
    assert run.slot_at == start + 60 * MINUTE


async def test_after_downtime_catch_up_none_waits_for_the_next_slot(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    start = clock.now()
    await declare(store, start, spec(server, "ok", "minutely", catch_up=CatchUp.NONE))
    clock.advance(3630)

    async with RunningWorker(store, dispatcher, clock, waker) as running:
        async with asyncio.timeout(DEADLINE):
            await clock.until_sleeping_until(start + 61 * MINUTE)
        assert server.calls_of("minutely") == 0

        clock.advance(30)
        await running.until_finished(1)

    assert server.calls == {("minutely", (start + 61 * MINUTE).isoformat()): 1}
