"""The simulator's side of alerts over loopback HTTP: an endpoint that fails on cue, a webhook
sink, and an alert travelling from a failing endpoint's runs to the sink."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from cronpilot.adapters.bootstrap import notifier_config
from cronpilot.adapters.http.dispatcher import AiohttpDispatcher
from cronpilot.adapters.http.signing import Signer, SigningKeys
from cronpilot.domain.model import EndpointSpec, Job, Schedule
from cronpilot.domain.ports import JobDeclaration
from cronpilot.harness.simulator import Simulator
from cronpilot.scheduler.notifier import Notifier
from cronpilot.scheduler.requests import request_for
from cronpilot.usecases.declarations import apply_to_catalog
from tests.support.clock import FakeClock
from tests.support.finishing import finish_one
from tests.support.memory_store import MemoryStore
from tests.support.settings import settings_for_tests


@pytest.fixture
async def base_url() -> AsyncIterator[str]:
    simulator = Simulator()
    url = await simulator.start()
    try:
        yield url
    finally:
        await simulator.stop()


async def _get(url: str) -> tuple[int, Any]:
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        return response.status, await response.json()


async def test_flaky_fails_its_calls_then_recovers_per_key(base_url: str) -> None:
    once = [(await _get(f"{base_url}/flaky/a?fail=2"))[0] for _ in range(4)]
    cycling = [(await _get(f"{base_url}/flaky/b?fail=1&recover=2"))[0] for _ in range(6)]

    assert once == [503, 503, 200, 200]
    assert cycling == [503, 200, 200, 503, 200, 200]
    assert (await _get(f"{base_url}/flaky/c?fail=-1"))[0] == 400
    assert (await _get(f"{base_url}/flaky/c?fail=many"))[0] == 400


async def test_flaky_can_answer_429_with_a_retry_after(base_url: str) -> None:
    async with aiohttp.ClientSession() as session:
        url = f"{base_url}/flaky/d?fail=1&recover=1&status=429&retry_after=8"
        async with session.get(url) as limited:
            assert (limited.status, limited.headers.get("Retry-After")) == (429, "8")
        async with session.get(url) as served:
            assert (served.status, served.headers.get("Retry-After")) == (200, None)
    assert (await _get(f"{base_url}/flaky/e?status=500"))[0] == 400
    assert (await _get(f"{base_url}/flaky/e?retry_after=-1"))[0] == 400


async def test_the_sink_keeps_what_it_receives(base_url: str) -> None:
    hook = f"{base_url}/hooks/alerts"
    async with aiohttp.ClientSession() as session:
        async with session.post(hook, json={"event": "failing"}) as response:
            assert (response.status, await response.json()) == (200, {"received": 1})
        async with session.post(hook, data=b"not json") as response:
            assert response.status == 400

    status, kept = await _get(hook)

    assert status == 200
    assert [(a["event"], a["signed"]) for a in kept["alerts"]] == [({"event": "failing"}, False)]


async def test_a_failing_endpoint_alerts_the_sink_once_then_when_it_recovers(
    base_url: str,
) -> None:
    clock = FakeClock()
    store = MemoryStore()
    spec = EndpointSpec(
        "checkout",
        f"{base_url}/flaky/checkout?fail=4",
        Schedule(interval_seconds=10),
        notify=(f"{base_url}/hooks/alerts",),
        notify_after=2,
    )
    await apply_to_catalog(store.catalog, [JobDeclaration(Job("shop"), [spec])], clock.now())
    dispatcher = AiohttpDispatcher(
        allowed_networks=["127.0.0.1/32"], signer=Signer(SigningKeys("s3cret"))
    )
    notifier = Notifier(
        store, dispatcher, clock, notifier_config(settings_for_tests(worker_id="n1"))
    )
    try:
        for _ in range(5):
            due = (await store.catalog.get_endpoint("shop/checkout")).next_run_at
            assert due is not None
            clock.advance((due - clock.now()).total_seconds())
            [claim] = await store.claims.claim_due(clock.now(), "w1", 30, 1)
            response = await dispatcher.dispatch(request_for(claim))
            await finish_one(store.claims, claim, "w1", response, clock.now())
            await notifier.deliver_due()
    finally:
        await dispatcher.close()

    _, kept = await _get(f"{base_url}/hooks/alerts")
    events = [
        (a["event"]["event"], a["event"]["failure_count"], a["signed"]) for a in kept["alerts"]
    ]
    assert events == [("failing", 2, True), ("recovered", 0, True)]
    assert kept["alerts"][0]["event"]["last_run"]["status_code"] == 503
