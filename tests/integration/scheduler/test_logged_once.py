"""One event, one log record: a claim, a reap and a database error are each reported by the
layer that knows most about them (the worker, the housekeeper, the worker's store health), not
again by the repository or the driver-error translation beneath them."""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta

import pytest

from cronpilot.adapters.http.dispatcher import AiohttpDispatcher
from cronpilot.adapters.sql import open_sql_store
from cronpilot.adapters.wake import InProcessWaker
from cronpilot.domain.ports import SecretCipher, Store
from cronpilot.scheduler.housekeeping import Housekeeping
from cronpilot.usecases.approvals import ApprovalDesk
from tests.integration.scheduler.builders import DEADLINE, RunningWorker, declare, spec
from tests.integration.scheduler.endpoint_server import EndpointServer
from tests.support.clock import FakeClock
from tests.support.settings import retention_for_tests


def _actions(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The `action` of every record cronpilot logged, debug lines included."""
    return [
        getattr(record, "action", "<none>")
        for record in caplog.records
        if record.name.startswith("cronpilot.")
    ]


async def test_a_claim_is_one_record(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
    *,
    caplog: pytest.LogCaptureFixture,
) -> None:
    await declare(store, clock.now(), spec(server, "ok", "a"), spec(server, "ok", "b"))
    caplog.set_level(logging.DEBUG)

    async with RunningWorker(store, dispatcher, clock, waker) as running:
        await running.until_finished(2)

    claims = [record for record in caplog.records if getattr(record, "action", "") == "claim"]
    assert [(record.name, getattr(record, "count", None)) for record in claims] == [
        ("cronpilot.scheduler.worker", 2)
    ]


async def test_a_reap_is_one_record(
    store: Store, clock: FakeClock, server: EndpointServer, caplog: pytest.LogCaptureFixture
) -> None:
    await declare(store, clock.now(), spec(server, "ok", "orphan"))
    await store.claims.claim_due(clock.now(), "dead-worker", 10, 10)
    clock.advance(11)
    housekeeping = Housekeeping(
        store,
        clock,
        reaper_interval_seconds=1,
        retention_runs=5,
        prune_interval_seconds=600,
        worker_stale_seconds=60,
        retention=retention_for_tests(),
        approvals=ApprovalDesk(store.unit_of_work, store.reading, None),
    )
    caplog.set_level(logging.DEBUG)

    assert await housekeeping.reap_once() == 1

    assert _actions(caplog) == ["reap"]


async def test_a_database_error_is_one_record(
    sql_url: str,
    cipher: SecretCipher,
    *,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The claim fails in the driver (a table gone); the error is translated, raised to the
    worker, and reported there once: no debug line from the translation beside it."""
    store = await open_sql_store(sql_url, cipher)
    try:
        await declare(store, clock.now(), spec(server, "ok", "a"))
        async with store.engine.begin() as conn:
            await conn.exec_driver_sql("DROP TABLE runs")
        caplog.set_level(logging.DEBUG)

        async with RunningWorker(store, dispatcher, clock, waker) as running:
            await running.until_called("claim_due", 1)
            async with asyncio.timeout(DEADLINE):
                await clock.until_sleeping_until(clock.now() + timedelta(seconds=0.2))
            logged = _actions(caplog)
    finally:
        await store.close()

    assert logged == ["store_unavailable"]
