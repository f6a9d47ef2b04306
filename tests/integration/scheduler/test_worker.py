"""The scheduler worker against every store, a real dispatcher and a loopback endpoint."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

from cronpilot.adapters.http.dispatcher import AiohttpDispatcher
from cronpilot.adapters.wake import InProcessWaker
from cronpilot.domain.model import ErrorKind, Pause, RunStatus, Schedule, ScheduleSource
from cronpilot.domain.ports import Store
from cronpilot.domain.schedule.governor import plan_next_run
from tests.integration.scheduler.builders import (
    DEADLINE,
    Held,
    Notifying,
    RunningWorker,
    StoreOf,
    declare,
    make_worker,
    running_runs,
    runs_of,
    spec,
)
from tests.integration.scheduler.endpoint_server import EndpointServer
from tests.support.clock import FakeClock
from tests.support.scheduling import set_pause


async def test_due_endpoints_are_called_recorded_and_replanned(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    endpoints = await declare(
        store,
        clock.now(),
        spec(server, "ok", "a"),
        spec(server, "ok", "b"),
        spec(server, "ok", "later"),
    )
    await set_pause(
        store.catalog,
        endpoints["later"].id,
        Pause("not yet", clock.now() + timedelta(hours=1)),
        clock.now(),
    )
    first_slot = clock.now()
    next_slot = first_slot + timedelta(seconds=60)

    async with RunningWorker(store, dispatcher, clock, waker) as running:
        await running.until_finished(2)
        async with asyncio.timeout(DEADLINE):
            await clock.until_sleeping_until(next_slot)
        assert running.worker.stats.claimed == 2
        assert server.calls_of("later") == 0
        for name in ("a", "b"):
            assert server.calls == {**server.calls, (name, first_slot.isoformat()): 1}
            [run] = await runs_of(store, name)
            assert (run.status, run.status_code, run.slot_at) == (
                RunStatus.SUCCESS,
                200,
                first_slot,
            )
            assert run.body == {"name": name, "calls": 1}
            endpoint = await store.catalog.get_endpoint(f"tests/{name}")
            assert endpoint.lease_owner is None
            assert endpoint.next_run_at == next_slot
            assert endpoint.next_run_at == plan_next_run(endpoint, clock.now()).at

        clock.advance(60)
        await running.until_finished(4)

    assert [run.slot_at for run in await runs_of(store, "a")] == [next_slot, first_slot]


async def test_concurrency_limit_holds(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    await declare(store, clock.now(), *(spec(server, "slow", f"e{i}") for i in range(9)))
    async with RunningWorker(store, dispatcher, clock, waker, concurrency=3, batch_size=9) as w:
        await w.until_finished(9)

    assert server.max_in_flight == 3
    assert [run.status for run in await running_runs(store)] == []


async def test_a_worker_claims_only_what_it_can_start_and_keeps_every_lease(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    """A batch larger than the free room must not park claims: they would keep their endpoints
    from other workers, and their leases would run out with nobody extending them."""
    endpoints = await declare(
        store, clock.now(), *(spec(server, "held", f"e{i}") for i in range(4))
    )
    config = {"concurrency": 2, "batch_size": 4, "lease_seconds": 10}
    async with RunningWorker(store, dispatcher, clock, waker, **config) as running:
        async with asyncio.timeout(DEADLINE):
            await server.until_in_flight(2)
        for extensions in (2, 4, 6):
            clock.advance(6)
            await running.until_called("extend_lease", extensions)

        leased = [
            endpoint
            for endpoint in await store.catalog.list_endpoints()
            if endpoint.lease_owner is not None
        ]
        assert len(leased) == 2
        assert [e.lease_until for e in leased] == [clock.now() + timedelta(seconds=10)] * 2
        assert await store.claims.reap(clock.now()) == 0
        # The other two are still free and due: any other worker could run them meanwhile.
        assert await store.claims.next_due_at() == endpoints["e0"].next_run_at

        server.release.set()
        await running.until_finished(4)

    assert server.max_in_flight == 2
    assert running.worker.stats.claimed == 4


async def test_the_lease_is_kept_until_the_run_is_recorded(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    """A store slow to record the run (a busy database) must not cost the worker its lease
    (within a lease: `test_store_outages` shows what happens after)."""
    await declare(store, clock.now(), spec(server, "ok", "quick"))
    slow_finish = Held(store.claims, "finish_many")
    slow_store = StoreOf(
        store.catalog, slow_finish, store.runs, store.schemas, store.graph, store.dag
    )
    async with RunningWorker(slow_store, dispatcher, clock, waker, lease_seconds=10) as running:
        async with asyncio.timeout(DEADLINE):
            await slow_finish.arrived.wait()
        clock.advance(6)
        await running.until_called("extend_lease", 1)
        # Past the claim's own lease (until 10 s): only the extension keeps it.
        assert await store.claims.reap(clock.now() + timedelta(seconds=5)) == 0

        slow_finish.release.set()
        await running.until_finished(1)

    [run] = await runs_of(store, "quick")
    assert run.status is RunStatus.SUCCESS
    assert running.worker.stats.finished == 1


async def test_hanging_endpoint_times_out_while_the_others_run(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    await declare(
        store,
        clock.now(),
        spec(server, "hang", "stuck", timeout_seconds=0.3),
        spec(server, "ok", "fine"),
        spec(server, "fail", "broken"),
    )
    async with RunningWorker(store, dispatcher, clock, waker, concurrency=2) as running:
        await running.until_finished(3)

    [stuck] = await runs_of(store, "stuck")
    assert (stuck.status, stuck.error_kind) == (RunStatus.FAILED, ErrorKind.TIMEOUT)
    [fine] = await runs_of(store, "fine")
    assert fine.status is RunStatus.SUCCESS
    [broken] = await runs_of(store, "broken")
    assert (broken.status, broken.status_code) == (RunStatus.FAILED, 500)
    assert fine.finished_at is not None and stuck.finished_at is not None
    assert fine.finished_at < stuck.finished_at


async def test_long_call_extends_its_lease_and_is_not_reaped(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    await declare(store, clock.now(), spec(server, "held", "long"))
    started = clock.now()
    async with RunningWorker(store, dispatcher, clock, waker, lease_seconds=10) as running:
        async with asyncio.timeout(DEADLINE):
            await server.until_in_flight(1)
            await clock.until_sleeping_until(started + timedelta(seconds=5))
            for _ in range(3):
                clock.advance(6)
                await clock.until_sleeping_until(clock.now() + timedelta(seconds=5))

        endpoint = await store.catalog.get_endpoint("tests/long")
        assert endpoint.lease_until == clock.now() + timedelta(seconds=10)
        assert clock.now() > started + timedelta(seconds=10)
        assert await store.claims.reap(clock.now()) == 0

        server.release.set()
        await running.until_finished(1)

    assert running.worker.stats.finished == 1
    [run] = await runs_of(store, "long")
    assert run.status is RunStatus.SUCCESS


async def test_result_of_a_reaped_call_is_dropped(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    await declare(store, clock.now(), spec(server, "held", "late"))
    async with RunningWorker(store, dispatcher, clock, waker, lease_seconds=10) as running:
        async with asyncio.timeout(DEADLINE):
            await server.until_in_flight(1)

        # Seen from a later moment, the lease has expired: the reaper takes the run over.
        assert await store.claims.reap(clock.now() + timedelta(seconds=11)) == 1
        server.release.set()
        await running.until_finished(1)

    [late] = await runs_of(store, "late")
    assert (late.status, late.error_kind) == (RunStatus.ABANDONED, ErrorKind.LEASE_EXPIRED)
    assert (running.worker.stats.dropped, running.worker.stats.finished) == (1, 0)


async def test_a_call_whose_lease_is_taken_over_is_cut_short(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    await declare(store, clock.now(), spec(server, "held", "taken"))
    async with RunningWorker(store, dispatcher, clock, waker, lease_seconds=10) as running:
        async with asyncio.timeout(DEADLINE):
            await server.until_in_flight(1)
        assert await store.claims.reap(clock.now() + timedelta(seconds=11)) == 1

        # The next extension finds the lease gone: the call is not waited for any longer.
        clock.advance(6)
        await running.until_called("extend_lease", 1)

    assert (running.worker.stats.dropped, running.worker.stats.abandoned) == (1, 0)
    assert running.claims.ended["finish"] == 0
    [taken] = await runs_of(store, "taken")
    assert (taken.status, taken.error_kind) == (RunStatus.ABANDONED, ErrorKind.LEASE_EXPIRED)


async def test_each_lease_is_extended_at_its_own_half_time_and_only_a_lost_one_is_cut(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    """One task keeps the leases of every call in hand: claims taken at different times are
    extended at their own half-times, and losing one lease cuts only that call short."""
    started = clock.now()
    await declare(store, started, spec(server, "held", "first"))
    async with RunningWorker(store, dispatcher, clock, waker, lease_seconds=10) as running:
        async with asyncio.timeout(DEADLINE):
            await server.until_in_flight(1)
            clock.advance(3)
            await declare(store, clock.now(), spec(server, "held", "second"))
            await waker.notify()
            await server.until_in_flight(2)
        # Seen from started + 11 only the first lease (until started + 10) has run out.
        assert await store.claims.reap(started + timedelta(seconds=11)) == 1

        clock.advance(3)  # started + 6: past the first claim's half-time, not the second's
        await running.until_called("extend_lease", 1)
        clock.advance(3)  # started + 9: past the second's (started + 8)
        await running.until_called("extend_lease", 2)
        second = await store.catalog.get_endpoint("tests/second")
        assert second.lease_until == clock.now() + timedelta(seconds=10)

        server.release.set()
        await running.until_finished(1)

    assert (running.worker.stats.dropped, running.worker.stats.finished) == (1, 1)
    [first] = await runs_of(store, "first")
    assert (first.status, first.error_kind) == (RunStatus.ABANDONED, ErrorKind.LEASE_EXPIRED)
    [recorded] = await runs_of(store, "second")
    assert recorded.status is RunStatus.SUCCESS


async def test_stop_lets_calls_in_flight_finish_within_grace(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    await declare(store, clock.now(), spec(server, "held", "slow"))
    worker = make_worker(store, dispatcher, clock, waker, grace_seconds=DEADLINE)
    stop = asyncio.Event()
    running = asyncio.create_task(worker.run(stop))
    async with asyncio.timeout(DEADLINE):
        await server.until_in_flight(1)
        stop.set()
        server.release.set()
        await running

    [run] = await runs_of(store, "slow")
    assert run.status is RunStatus.SUCCESS
    assert worker.stats.abandoned == 0


async def test_stop_abandons_calls_still_running_after_grace(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    await declare(store, clock.now(), spec(server, "hang", "stuck"), spec(server, "ok", "quick"))
    worker = make_worker(store, dispatcher, clock, waker, grace_seconds=0.2)
    stop = asyncio.Event()
    running = asyncio.create_task(worker.run(stop))
    async with asyncio.timeout(DEADLINE):
        await server.until_in_flight(1)
        await server.until_calls("quick")
        stop.set()
        await running

    [stuck] = await runs_of(store, "stuck")
    assert (stuck.status, stuck.error_kind) == (RunStatus.ABANDONED, ErrorKind.SHUTDOWN)
    endpoint = await store.catalog.get_endpoint("tests/stuck")
    assert endpoint.lease_owner is None
    assert endpoint.next_run_at == stuck.slot_at + timedelta(seconds=60)
    [quick] = await runs_of(store, "quick")
    assert quick.status is RunStatus.SUCCESS
    assert await running_runs(store) == []


async def test_claims_taken_as_stop_arrives_are_released_still_due(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    endpoints = await declare(store, clock.now(), spec(server, "ok", "a"), spec(server, "ok", "b"))
    stop = asyncio.Event()
    # Stop arrives (as a SIGTERM might) while the claim is on its way back.
    interrupted = StoreOf(
        store.catalog,
        Notifying(store.claims, claim_due=stop),
        store.runs,
        store.schemas,
        store.graph,
        store.dag,
    )
    worker = make_worker(interrupted, dispatcher, clock, waker)

    async with asyncio.timeout(DEADLINE):
        await worker.run(stop)

    assert server.calls == {}
    assert worker.stats.released == 2
    assert await running_runs(store) == []
    for endpoint in endpoints.values():
        after = await store.catalog.get_endpoint(endpoint.id)
        assert after.lease_owner is None
        assert after.next_run_at == endpoint.next_run_at == clock.now()
    async with RunningWorker(store, dispatcher, clock, waker) as running:
        await running.until_finished(2)
    assert running.worker.stats.finished == 2


async def test_sleeping_worker_wakes_for_an_endpoint_made_due_earlier(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    endpoints = await declare(
        store,
        clock.now(),
        spec(server, "ok", "hourly", schedule=Schedule(interval_seconds=3600)),
        spec(server, "ok", "paused"),
    )
    await set_pause(store.catalog, endpoints["paused"].id, Pause("by hand"), clock.now())
    async with RunningWorker(store, dispatcher, clock, waker, max_sleep_seconds=3600) as running:
        await running.until_finished(1)
        async with asyncio.timeout(DEADLINE):
            # Nothing in flight, nothing due for an hour: the worker sleeps until then.
            await clock.until_sleeping_until(clock.now() + timedelta(seconds=3600))

        resumed = await set_pause(store.catalog, endpoints["paused"].id, None, clock.now())
        assert resumed.next_run_at == clock.now()
        await waker.notify()
        await running.until_finished(2)

    [run] = await runs_of(store, "paused")
    assert (run.status, run.schedule_source) == (RunStatus.SUCCESS, ScheduleSource.BASELINE)
    assert server.calls_of("hourly") == 1


async def test_sleeping_worker_wakes_when_the_clock_reaches_the_next_slot(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    await declare(store, clock.now(), spec(server, "ok", "minutely"))
    worker = make_worker(store, dispatcher, clock, waker, max_sleep_seconds=3600)
    stop = asyncio.Event()
    running = asyncio.create_task(worker.run(stop))
    async with asyncio.timeout(DEADLINE):
        for calls in (1, 2, 3):
            await server.until_calls("minutely", calls)
            await clock.until_sleeping_until(clock.now() + timedelta(seconds=60))
            clock.advance(60)
        stop.set()
        await running

    assert [run.status for run in await runs_of(store, "minutely")] == [RunStatus.SUCCESS] * 3


async def _claimed_ahead(running: RunningWorker, clock: FakeClock) -> datetime:
    """Run a minutely endpoint's first slot with 2 s of claim-ahead, then take the worker to
    the moment it claims the next slot: 2 s before it is due. Returns that slot."""
    next_slot = clock.now() + timedelta(seconds=60)
    await running.until_finished(1)
    async with asyncio.timeout(DEADLINE):
        # After its quiet time (0.1 s at most), idle until the next slot comes within reach.
        await clock.until_sleeping_until(next_slot - timedelta(seconds=2))
        clock.advance(58)
        # Claimed now, with its run inserted, but the call waits for the slot.
        await clock.until_sleeping_until(next_slot)
    return next_slot


async def test_a_slot_claimed_ahead_is_called_at_its_due_time(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    await declare(store, clock.now(), spec(server, "ok", "minutely"))
    async with RunningWorker(store, dispatcher, clock, waker, claim_ahead_seconds=2) as running:
        next_slot = await _claimed_ahead(running, clock)
        [waiting] = await running_runs(store)
        assert waiting.slot_at == next_slot
        assert server.calls_of("minutely") == 1

        clock.advance(2)
        await running.until_finished(2)

    assert server.calls_of("minutely") == 2
    latest, _ = await runs_of(store, "minutely")
    assert latest.slot_at == next_slot


async def test_stop_gives_back_a_slot_claimed_ahead_uncalled(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    await declare(store, clock.now(), spec(server, "ok", "minutely"))
    async with RunningWorker(store, dispatcher, clock, waker, claim_ahead_seconds=2) as running:
        next_slot = await _claimed_ahead(running, clock)

    assert running.worker.stats.released == 1
    assert server.calls_of("minutely") == 1
    assert await running_runs(store) == []
    after = await store.catalog.get_endpoint("tests/minutely")
    assert (after.lease_owner, after.next_run_at) == (None, next_slot)


async def test_a_backlog_held_back_by_the_low_water_mark_still_claims_once_the_quiet_ends(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    held = [spec(server, "held", f"h{n}") for n in range(19)]
    await declare(store, clock.now(), spec(server, "ok", "quick"), *held)
    config = {"concurrency": 20, "batch_size": 20, "claim_ahead_seconds": 2}
    async with RunningWorker(store, dispatcher, clock, waker, **config) as running:
        # The first claim takes all 20 (a full batch: a backlog); then 19 calls hang and one
        # call's worth of room is free, under the low-water mark of 2.
        await running.until_finished(1)
        async with asyncio.timeout(DEADLINE):
            await server.until_in_flight(19)
        clock.advance(60)
        await running.until_finished(2)
        server.release.set()

    assert server.calls_of("quick") == 2
