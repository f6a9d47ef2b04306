"""The scheduler worker when the store goes away (a database restarting, a blip): it retries
soon and then less often, says so in one line, and keeps no lease it is not making progress on,
so that other workers take those endpoints once the lease lapses."""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta
from typing import Any

import pytest

from cronpilot.adapters.http.dispatcher import AiohttpDispatcher
from cronpilot.adapters.wake import InProcessWaker
from cronpilot.domain.model import ErrorKind, RunStatus
from cronpilot.domain.ports import Store
from tests.integration.scheduler.builders import (
    DEADLINE,
    Failing,
    Held,
    RunningWorker,
    StoreOf,
    declare,
    runs_of,
    spec,
)
from tests.integration.scheduler.endpoint_server import EndpointServer
from tests.support.clock import FakeClock

# Each module of the worker logs under its own name; the package logger is their parent.
WORKER_LOG = "cronpilot.scheduler"


def _with_claims(store: Store, claims: object) -> StoreOf:
    return StoreOf(store.catalog, claims, store.runs, store.schemas, store.graph, store.dag)


def _worker_lines(caplog: pytest.LogCaptureFixture, level: int = logging.INFO) -> list[str]:
    return [
        record.getMessage()
        for record in caplog.records
        if record.name.startswith(f"{WORKER_LOG}.") and record.levelno >= level
    ]


async def test_an_unreachable_store_is_tried_again_from_a_fifth_of_a_second_doubling(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
    *,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger=WORKER_LOG)
    await declare(store, clock.now(), spec(server, "ok", "quick"))
    claims = Failing(store.claims, claim_due=3)
    async with RunningWorker(_with_claims(store, claims), dispatcher, clock, waker) as running:
        async with asyncio.timeout(DEADLINE):
            for wait in (0.2, 0.4, 0.8):
                await clock.until_sleeping_until(clock.now() + timedelta(seconds=wait))
                clock.advance(wait)
        await running.until_finished(1)
        [run] = await runs_of(store, "quick")

        # A success starts the backoff over.
        next_slot = run.slot_at + timedelta(seconds=60)
        async with asyncio.timeout(DEADLINE):
            await clock.until_sleeping_until(next_slot)
            claims.times["claim_due"] = 1
            clock.advance((next_slot - clock.now()).total_seconds())
            await clock.until_sleeping_until(clock.now() + timedelta(seconds=0.2))

    assert run.status is RunStatus.SUCCESS
    unavailable = (
        "store unavailable (StoreUnavailable: database postgresql+asyncpg://db/cronpilot "
        "failed: ConnectionDoesNotExistError: connection was closed in the middle of "
        "operation); retrying in {} s"
    )
    lines = _worker_lines(caplog, logging.WARNING)
    assert lines == [unavailable.format(wait) for wait in ("0.2", "0.4", "0.8", "0.2")]
    assert "store reachable again" in _worker_lines(caplog)
    assert [record for record in caplog.records if record.exc_info] == []


@pytest.mark.parametrize(
    "outage",
    [
        pytest.param({"claim_due": 1, "committed": ["claim_due"]}, id="claim-reply-lost"),
        pytest.param({"finish_many": 3}, id="finishes-fail"),
    ],
)
async def test_slots_a_restarting_database_cut_off_hold_no_lease_and_are_reported_once(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
    *,
    caplog: pytest.LogCaptureFixture,
    outage: dict[str, Any],
) -> None:
    """The claim committed but its reply was lost, or the runs could not be recorded: this
    worker has nothing left to make progress on, so it extends no lease; once the leases lapse
    the reaper frees the endpoints for any worker. The outage is one line, not one per run."""
    caplog.set_level(logging.INFO, logger=WORKER_LOG)
    started = clock.now()
    await declare(store, started, *(spec(server, "ok", name) for name in ("a", "b", "c")))
    claims = Failing(store.claims, **outage)
    async with RunningWorker(
        _with_claims(store, claims), dispatcher, clock, waker, lease_seconds=10
    ) as running:
        async with asyncio.timeout(DEADLINE):
            if "finish_many" in outage:
                await running.until_finished(3)
            else:
                await running.until_called("claim_due", 1)
                await clock.until_sleeping_until(started + timedelta(seconds=0.2))
                clock.advance(0.2)
                await running.until_called("claim_due", 2)
        clock.advance(6)  # past every claim's half-time
        assert await store.claims.reap(clock.now()) == 0
        clock.advance(5)  # past the claims' leases
        assert await store.claims.reap(clock.now()) == 3

    assert running.claims.ended["extend_lease"] == 0
    for name in ("a", "b", "c"):
        [run] = await runs_of(store, name)
        assert (run.status, run.error_kind) == (RunStatus.ABANDONED, ErrorKind.LEASE_EXPIRED)
    later = clock.now() + timedelta(seconds=60)
    taken = await store.claims.claim_due(clock.now(), "w2", 10, 10, due_by=later)
    assert sorted(claim.endpoint.name for claim in taken) == ["a", "b", "c"]
    [warning] = _worker_lines(caplog, logging.WARNING)
    assert "ConnectionDoesNotExistError" in warning
    assert [record for record in caplog.records if record.exc_info] == []


async def test_a_run_the_store_cannot_record_within_a_lease_lets_its_lease_lapse(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    """A recording that hangs (its connection attempt to a restarting database never answers)
    is no progress: after a whole lease the keeper stops extending it, while it goes on
    extending a call that is still under way."""
    started = clock.now()
    await declare(store, started, spec(server, "ok", "stuck"), spec(server, "held", "long"))
    hanging = Held(store.claims, "finish_many")
    async with RunningWorker(
        _with_claims(store, hanging), dispatcher, clock, waker, lease_seconds=10
    ) as running:
        async with asyncio.timeout(DEADLINE):
            await hanging.arrived.wait()
            await server.until_in_flight(1)
        clock.advance(6)
        await running.until_called("extend_lease", 2)
        clock.advance(6)  # stuck has waited 12 s to be recorded: more than a lease
        async with asyncio.timeout(DEADLINE):
            await clock.until_sleeping_until(clock.now() + timedelta(seconds=5))
        assert running.claims.ended["extend_lease"] == 3
        long = await store.catalog.get_endpoint("tests/long")
        assert long.lease_until == clock.now() + timedelta(seconds=10)
        stuck = await store.catalog.get_endpoint("tests/stuck")
        assert stuck.lease_until == started + timedelta(seconds=16)

        clock.advance(5)
        assert await store.claims.reap(clock.now()) == 1
        later = clock.now() + timedelta(seconds=60)
        [taken] = await store.claims.claim_due(clock.now(), "w2", 10, 10, due_by=later)
        assert taken.endpoint.name == "stuck"
        # The store comes back: the late result is refused, the new holder's lease stands.
        hanging.release.set()
        server.release.set()
        await running.until_finished(2)

    assert (running.worker.stats.dropped, running.worker.stats.finished) == (1, 1)
    [_, abandoned] = await runs_of(store, "stuck")
    assert (abandoned.status, abandoned.error_kind) == (
        RunStatus.ABANDONED,
        ErrorKind.LEASE_EXPIRED,
    )
    [recorded] = await runs_of(store, "long")
    assert recorded.status is RunStatus.SUCCESS
