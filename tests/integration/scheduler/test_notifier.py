"""The notifier against real webhooks on 127.0.0.1: delivery, backoff on a fake clock, the
address guard on every hop, and the background loop (signing: test_signed_alerts.py)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

import pytest
from aiohttp import web

from cronpilot.adapters.bootstrap import notifier_config
from cronpilot.adapters.http.dispatcher import AiohttpDispatcher
from cronpilot.domain.access.secrets import loggable_url
from cronpilot.domain.alerts.alerts import (
    AlertEvent,
    DeliveryPolicy,
    Notification,
    NotificationStatus,
)
from cronpilot.domain.model import Response
from cronpilot.domain.ports import Store
from cronpilot.scheduler.notifier import EVENT_HEADER, Notifier
from cronpilot.usecases.declarations import apply_to_catalog
from tests.contract.builders import LEASE_SECONDS, declaration, spec
from tests.support.clock import FakeClock
from tests.support.finishing import finish_one
from tests.support.loopback import LoopbackServer
from tests.support.settings import settings_for_tests
from tests.support.side_tasks import running

FAILED = Response(status_code=503, error_message="HTTP 503 Service Unavailable")


@dataclass
class Received:
    body: bytes
    headers: dict[str, str]

    @property
    def document(self) -> dict[str, object]:
        loaded: dict[str, object] = json.loads(self.body)
        return loaded


@dataclass
class WebhookServer(LoopbackServer):
    """Answers POST /hook with the next status of `statuses` (then 200), records every call;
    `/moved` redirects to `location`."""

    statuses: list[int] = field(default_factory=list)
    location: str = ""
    received: list[Received] = field(default_factory=list)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    def url(self, path: str = "/hook") -> str:
        return super().url(path)

    def app(self) -> web.Application:
        app = web.Application()
        app.add_routes([web.post("/hook", self._hook), web.post("/moved", self._moved)])
        return app

    async def _hook(self, request: web.Request) -> web.Response:
        self.received.append(Received(await request.read(), dict(request.headers)))
        self.arrived.set()
        status = self.statuses.pop(0) if self.statuses else 200
        return web.json_response({"status": status}, status=status)

    async def _moved(self, request: web.Request) -> web.Response:
        self.received.append(Received(await request.read(), dict(request.headers)))
        raise web.HTTPTemporaryRedirect(self.location)


@pytest.fixture
async def hooks() -> AsyncIterator[WebhookServer]:
    async with WebhookServer() as server:
        yield server


def _notifier(
    store: Store, dispatcher: AiohttpDispatcher, clock: FakeClock, **config: Any
) -> Notifier:
    settings = settings_for_tests(worker_id="n1")
    return Notifier(store, dispatcher, clock, replace(notifier_config(settings), **config))


async def _raise_failing(store: Store, clock: FakeClock, *urls: str) -> None:
    """An endpoint notifying `urls` at its first failure, failed once at the clock's now."""
    await apply_to_catalog(
        store.catalog,
        [declaration("shop", spec("orders", notify=urls, notify_after=1))],
        clock.now(),
    )
    [claim] = await store.claims.claim_due(clock.now(), "w1", LEASE_SECONDS, 1)
    await finish_one(store.claims, claim, "w1", FAILED, clock.now())


async def _only(store: Store) -> Notification:
    [notification] = await store.notifications.list_notifications()
    return notification


async def test_a_webhook_answering_500_is_tried_again_with_backoff_until_it_takes_it(
    store: Store, dispatcher: AiohttpDispatcher, clock: FakeClock, hooks: WebhookServer
) -> None:
    hooks.statuses = [500, 500]
    await _raise_failing(store, clock, hooks.url())
    notifier = _notifier(store, dispatcher, clock)
    start = clock.now()

    assert await notifier.deliver_due() == 1
    first = await _only(store)
    assert (first.status, first.attempts, first.last_error) == (
        NotificationStatus.PENDING,
        1,
        "HTTP 500 Internal Server Error",
    )
    assert first.next_attempt_at == start + timedelta(seconds=2)

    clock.advance(1.9)
    assert await notifier.deliver_due() == 0
    clock.advance(0.1)
    assert await notifier.deliver_due() == 1
    second = await _only(store)
    assert (second.attempts, second.next_attempt_at) == (2, clock.now() + timedelta(seconds=10))

    clock.advance(10)
    assert await notifier.deliver_due() == 1
    delivered = await _only(store)
    assert (delivered.status, delivered.attempts, delivered.delivered_at) == (
        NotificationStatus.DELIVERED,
        3,
        clock.now(),
    )
    assert len(hooks.received) == 3
    assert {call.body for call in hooks.received} == {hooks.received[0].body}
    call = hooks.received[0]
    assert call.document == delivered.payload
    assert call.document["event"] == "failing"
    assert call.headers[EVENT_HEADER] == "failing"
    assert call.headers["Content-Type"] == "application/json"
    clock.advance(3600)
    assert await notifier.deliver_due() == 0


async def test_delivery_gives_up_after_the_policy_attempts(
    store: Store, dispatcher: AiohttpDispatcher, clock: FakeClock, hooks: WebhookServer
) -> None:
    hooks.statuses = [503, 503, 503]
    await _raise_failing(store, clock, hooks.url())
    notifier = _notifier(store, dispatcher, clock, policy=DeliveryPolicy(attempts=2))

    await notifier.deliver_due()
    clock.advance(2)
    await notifier.deliver_due()
    clock.advance(3600)

    assert await notifier.deliver_due() == 0
    given_up = await _only(store)
    assert (given_up.status, given_up.attempts, given_up.last_error) == (
        NotificationStatus.FAILED,
        2,
        "HTTP 503 Service Unavailable",
    )
    assert len(hooks.received) == 2


async def test_the_address_guard_checks_every_hop_of_a_delivery(
    store: Store, dispatcher: AiohttpDispatcher, clock: FakeClock, hooks: WebhookServer
) -> None:
    hooks.location = "http://169.254.169.254/latest/meta-data"
    # Stored directly, as a file checked against a wider allowlist might have left it.
    await _raise_failing(store, clock, hooks.url("/moved"), "http://10.1.2.3/hook")

    await _notifier(store, dispatcher, clock).deliver_due()

    errors = {n.url: n.last_error for n in await store.notifications.list_notifications()}
    # The URLs' paths are not quoted back: a webhook's may be its credential.
    metadata = loggable_url("http://169.254.169.254/latest/meta-data")
    assert errors == {
        hooks.url("/moved"): f"blocked_address: refused {metadata}: "
        "169.254.169.254 is link-local"
        "; to call it, add 169.254.169.254/32 to CRONPILOT_ALLOWED_NETWORKS",
        "http://10.1.2.3/hook": f"blocked_address: refused {loggable_url('http://10.1.2.3/hook')}: "
        "10.1.2.3 is private; to call it, add 10.1.2.3/32 to CRONPILOT_ALLOWED_NETWORKS",
    }
    assert metadata.startswith("http://169.254.169.254/… #")
    assert len(hooks.received) == 1


async def test_the_background_loop_delivers_and_stops(
    store: Store, dispatcher: AiohttpDispatcher, clock: FakeClock, hooks: WebhookServer
) -> None:
    notifier = _notifier(store, dispatcher, clock, poll_seconds=2.0)
    async with running(notifier):
        async with asyncio.timeout(10):
            await clock.until_sleeping_until(clock.now() + timedelta(seconds=2))
            await _raise_failing(store, clock, hooks.url())
            clock.advance(2)
            await hooks.arrived.wait()
            await clock.until_sleeping_until(clock.now() + timedelta(seconds=2))

    delivered = await _only(store)
    assert (delivered.status, delivered.event) == (NotificationStatus.DELIVERED, AlertEvent.FAILING)
