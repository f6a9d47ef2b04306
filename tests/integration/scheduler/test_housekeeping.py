"""Housekeeping: the reaper and retention, by hand with a fake clock and on their timers."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from datetime import timedelta

import pytest

from cronpilot.adapters.http.dispatcher import AiohttpDispatcher
from cronpilot.adapters.wake import InProcessWaker
from cronpilot.domain.graph.dependencies import with_dependants
from cronpilot.domain.model import ErrorKind, Finish, Recorded, Response, RunStatus, Schedule
from cronpilot.domain.ports import Store
from cronpilot.domain.runs.workers import WorkerInfo
from cronpilot.scheduler.housekeeping import STALE_WAIT, Housekeeping
from cronpilot.usecases.approvals import ApprovalDesk
from tests.integration.scheduler.builders import (
    DEADLINE,
    Failing,
    Notifying,
    RunningWorker,
    StoreOf,
    declare,
    runs_of,
    spec,
)
from tests.integration.scheduler.endpoint_server import EndpointServer
from tests.support.clock import FakeClock
from tests.support.settings import retention_for_tests
from tests.support.side_tasks import running

STALE = 60.0


async def test_reaper_abandons_runs_of_a_dead_worker_once_its_lease_expires(
    store: Store, clock: FakeClock, server: EndpointServer
) -> None:
    await declare(store, clock.now(), spec(server, "ok", "orphan"))
    [claim] = await store.claims.claim_due(clock.now(), "dead-worker", 10, 10)
    housekeeping = Housekeeping(
        store,
        clock,
        reaper_interval_seconds=1,
        retention_runs=5,
        prune_interval_seconds=600,
        worker_stale_seconds=STALE,
        retention=retention_for_tests(),
        approvals=ApprovalDesk(store.unit_of_work, store.reading, None),
    )

    assert await housekeeping.reap_once() == 0
    clock.advance(11)
    assert await housekeeping.reap_once() == 1
    assert await housekeeping.reap_once() == 0

    [run] = await runs_of(store, "orphan")
    assert (run.status, run.error_kind) == (RunStatus.ABANDONED, ErrorKind.LEASE_EXPIRED)
    endpoint = await store.catalog.get_endpoint(claim.endpoint.id)
    assert endpoint.lease_owner is None
    assert endpoint.next_run_at == claim.slot_at + timedelta(seconds=60)


async def test_retention_keeps_the_newest_runs_of_each_endpoint(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    await declare(store, clock.now(), spec(server, "ok", "a"), spec(server, "ok", "b"))
    async with RunningWorker(store, dispatcher, clock, waker) as running:
        await running.until_finished(2)
        for rounds in (2, 3, 4):
            async with asyncio.timeout(DEADLINE):
                await clock.until_sleeping_until(clock.now() + timedelta(seconds=60))
            clock.advance(60)
            await running.until_finished(2 * rounds)
    housekeeping = Housekeeping(
        store,
        clock,
        reaper_interval_seconds=1,
        retention_runs=3,
        prune_interval_seconds=600,
        worker_stale_seconds=STALE,
        retention=retention_for_tests(),
        approvals=ApprovalDesk(store.unit_of_work, store.reading, None),
    )

    assert await housekeeping.prune_once() == 2

    for name in ("a", "b"):
        slots = [run.slot_at for run in await runs_of(store, name)]
        assert slots == [clock.now() - timedelta(seconds=60 * n) for n in (0, 1, 2)]


async def test_timers_run_both_jobs_and_stop_cleanly(
    store: Store, clock: FakeClock, server: EndpointServer
) -> None:
    await declare(store, clock.now(), spec(server, "ok", "orphan"))
    await store.claims.claim_due(clock.now(), "dead-worker", 10, 10)
    clock.advance(11)
    reaped, pruned = asyncio.Event(), asyncio.Event()
    observed = StoreOf(
        store.catalog,
        Notifying(store.claims, reap=reaped),
        Notifying(store.runs, prune=pruned),
        store.schemas,
        store.graph,
        store.dag,
        store.workers,
    )
    # The first prune waits for its interval when that is shorter than a minute.
    housekeeping = Housekeeping(
        observed,
        clock,
        reaper_interval_seconds=60,
        retention_runs=5,
        prune_interval_seconds=20,
        worker_stale_seconds=STALE,
        retention=retention_for_tests(),
        approvals=ApprovalDesk(store.unit_of_work, store.reading, None),
    )

    async with running(housekeeping):
        async with asyncio.timeout(DEADLINE):
            await reaped.wait()
            assert not pruned.is_set()
            await clock.until_sleeping_until(clock.now() + timedelta(seconds=20))
            clock.advance(20)
            await pruned.wait()

    [run] = await runs_of(store, "orphan")
    assert run.status is RunStatus.ABANDONED


async def test_retention_drops_dag_waits_whose_parents_never_reported(
    store: Store, clock: FakeClock, server: EndpointServer
) -> None:
    specs = with_dependants(
        [
            spec(server, "ok", "root"),
            spec(server, "ok", "a", schedule=Schedule(), depends_on=("root",)),
            spec(server, "ok", "b", schedule=Schedule(), depends_on=("root",)),
            spec(server, "ok", "join", schedule=Schedule(), depends_on=("a", "b")),
        ]
    )
    await declare(store, clock.now(), *specs)
    [root] = await store.claims.claim_due(clock.now(), "w", 60, 10)
    ok = Response(status_code=200, body={}, body_hash="h")
    [recorded] = await store.claims.finish_many([Finish(root, "w", ok, clock.now(), 60)])
    assert isinstance(recorded, Recorded)
    a = next(c for c in recorded.started if c.endpoint.name == "a")
    await store.claims.finish_many([Finish(a, "w", ok, clock.now(), 60)])
    # b's worker died before finishing: join waits for a report that never comes.
    housekeeping = Housekeeping(
        store,
        clock,
        reaper_interval_seconds=1,
        retention_runs=5,
        prune_interval_seconds=600,
        worker_stale_seconds=STALE,
        retention=retention_for_tests(),
        approvals=ApprovalDesk(store.unit_of_work, store.reading, None),
    )

    await housekeeping.prune_once()
    assert len(await store.dag.list_waits()) == 1
    clock.advance(STALE_WAIT.total_seconds() + 1)
    await housekeeping.prune_once()
    assert await store.dag.list_waits() == []


async def test_a_store_outage_on_the_timer_is_one_line_and_the_job_runs_again(
    store: Store, clock: FakeClock, server: EndpointServer, caplog: pytest.LogCaptureFixture
) -> None:
    await declare(store, clock.now(), spec(server, "ok", "orphan"))
    await store.claims.claim_due(clock.now(), "dead-worker", 10, 10)
    clock.advance(11)
    reaped = asyncio.Event()
    observed = StoreOf(
        store.catalog,
        Notifying(Failing(store.claims, reap=1), reap=reaped),
        store.runs,
        store.schemas,
        store.graph,
        store.dag,
    )
    housekeeping = Housekeeping(
        observed,
        clock,
        reaper_interval_seconds=5,
        retention_runs=5,
        prune_interval_seconds=600,
        worker_stale_seconds=STALE,
        retention=retention_for_tests(),
        approvals=ApprovalDesk(store.unit_of_work, store.reading, None),
    )

    async with running(housekeeping):
        async with asyncio.timeout(DEADLINE):
            # The first turn fails; the timer waits its interval on the clock and tries again.
            await clock.until_sleeping_until(clock.now() + timedelta(seconds=5))
            assert not reaped.is_set()
            clock.advance(5)
            await reaped.wait()

    [run] = await runs_of(store, "orphan")
    assert run.status is RunStatus.ABANDONED
    [failed] = [
        record
        for record in caplog.records
        if record.levelno >= logging.ERROR
        or (record.name == "cronpilot.runtime.timing" and "failed" in record.getMessage())
    ]
    assert failed.getMessage().startswith("reap failed (StoreUnavailable: database ")
    assert [record for record in caplog.records if record.exc_info] == []


async def test_prune_forgets_workers_not_heard_from_within_the_stale_window(
    store: Store, clock: FakeClock
) -> None:
    start = clock.now()
    old = WorkerInfo("w-old", "box", 1, "0.1.0", start, last_seen=start)
    await store.workers.beat(old)
    await store.workers.beat(replace(old, id="w-new", last_seen=start + timedelta(seconds=30)))
    housekeeping = Housekeeping(
        store,
        clock,
        reaper_interval_seconds=1,
        retention_runs=5,
        prune_interval_seconds=600,
        worker_stale_seconds=STALE,
        retention=retention_for_tests(),
        approvals=ApprovalDesk(store.unit_of_work, store.reading, None),
    )

    clock.advance(STALE)
    await housekeeping.prune_once()
    assert len(await store.workers.list_active(start, start)) == 2
    clock.advance(1)
    await housekeeping.prune_once()

    [kept] = await store.workers.list_active(start, start)
    assert kept.worker.id == "w-new"
