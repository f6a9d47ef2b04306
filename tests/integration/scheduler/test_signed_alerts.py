"""Alerts to `webhook` targets, signed by the Standard Webhooks spec and verified by its reference
library (`standardwebhooks`) in a real aiohttp receiver on 127.0.0.1: the id, a redelivery,
a key rotating (two signatures during its grace, one after), and the legacy headers on request."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest
from aiohttp import web
from standardwebhooks import Webhook, WebhookVerificationError

from cronpilot.adapters.bootstrap import build_dispatcher, notifier_config
from cronpilot.adapters.http.dispatcher import AiohttpDispatcher
from cronpilot.adapters.http.signing import (
    ID_HEADER,
    LEGACY_SIGNATURE_HEADER,
    LEGACY_TIMESTAMP_HEADER,
    SIGNATURE_HEADER,
    Signer,
    SigningKeys,
    legacy_signature,
)
from cronpilot.adapters.settings import load_settings
from cronpilot.domain.alerts.alerts import NotificationStatus
from cronpilot.domain.alerts.notify_targets import NotifyTarget, TargetKind
from cronpilot.domain.errors import InvalidConfig
from cronpilot.domain.model import Response
from cronpilot.domain.ports import Dispatcher, Store
from cronpilot.scheduler.notifier import Notifier
from cronpilot.usecases.declarations import apply_to_catalog
from tests.contract.builders import LEASE_SECONDS, declaration, spec
from tests.integration.scheduler.conftest import LOOPBACK
from tests.support.clock import FakeClock
from tests.support.finishing import finish_one
from tests.support.loopback import LoopbackServer
from tests.support.settings import settings_for_tests

NEW = "whsec_" + base64.b64encode(b"the new key, thirty-two bytes ok").decode()
OLD = "whsec_" + base64.b64encode(b"the old key, rotated out shortly").decode()
FAILED = Response(status_code=503, error_message="HTTP 503 Service Unavailable")


@dataclass
class VerifyingReceiver(LoopbackServer):
    """A receiver holding one secret: 204 for a message its library verifies, else 401."""

    secret: str | bytes = NEW
    answers: list[int] = field(default_factory=list)
    """Statuses to answer verified messages with first (then 204)."""
    verified: list[dict[str, str]] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    bodies: list[bytes] = field(default_factory=list)

    def app(self) -> web.Application:
        app = web.Application()
        app.add_routes([web.post("/hook", self._hook)])
        return app

    async def _hook(self, request: web.Request) -> web.Response:
        body = await request.read()
        headers = dict(request.headers)
        try:
            Webhook(self.secret).verify(body, headers)
        except WebhookVerificationError as exc:
            self.refused.append(str(exc))
            return web.Response(status=401)
        self.verified.append(headers)
        self.bodies.append(body)
        return web.Response(status=self.answers.pop(0) if self.answers else 204)


@pytest.fixture
async def receiver() -> AsyncIterator[VerifyingReceiver]:
    async with VerifyingReceiver() as server:
        yield server


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


async def _alert(store: Store, clock: FakeClock, url: str) -> None:
    """A `failing` alert for a `webhook` target at `url`, in the outbox."""
    target = NotifyTarget(TargetKind.WEBHOOK, url=url)
    await apply_to_catalog(
        store.catalog,
        [declaration("shop", spec("orders", notify_targets=(target,), notify_after=1))],
        clock.now(),
    )
    [claim] = await store.claims.claim_due(clock.now(), "w1", LEASE_SECONDS, 1)
    await finish_one(store.claims, claim, "w1", FAILED, clock.now())


async def _deliver(store: Store, clock: FakeClock, dispatcher: Dispatcher) -> None:
    settings = settings_for_tests(worker_id="n1")
    notifier = Notifier(store, dispatcher, clock, notifier_config(settings))
    try:
        await notifier.deliver_due()
    finally:
        await dispatcher.close()


def _signing(keys: SigningKeys) -> AiohttpDispatcher:
    return AiohttpDispatcher(allowed_networks=LOOPBACK, signer=Signer(keys))


async def test_a_webhook_target_s_alert_verifies_with_the_reference_library(
    store: Store, clock: FakeClock, receiver: VerifyingReceiver
) -> None:
    await _alert(store, clock, receiver.url("/hook"))
    settings = settings_for_tests(signing_secret=NEW, allowed_networks=LOOPBACK)

    await _deliver(store, clock, build_dispatcher(settings))

    [headers] = receiver.verified
    [notification] = await store.notifications.list_notifications()
    assert notification.status is NotificationStatus.DELIVERED
    event = Webhook(NEW).verify(receiver.bodies[0], headers)
    assert headers[ID_HEADER] == event["id"]
    assert LEGACY_SIGNATURE_HEADER not in headers


async def test_a_redelivery_carries_the_same_webhook_id(
    store: Store, clock: FakeClock, receiver: VerifyingReceiver
) -> None:
    receiver.answers = [500]
    await _alert(store, clock, receiver.url("/hook"))

    await _deliver(store, clock, _signing(SigningKeys(NEW)))
    clock.advance(3600)
    await _deliver(store, clock, _signing(SigningKeys(NEW)))

    first, second = receiver.verified
    assert first[ID_HEADER] == second[ID_HEADER]
    [notification] = await store.notifications.list_notifications()
    assert (notification.status, notification.attempts) == (NotificationStatus.DELIVERED, 2)


@pytest.mark.parametrize("secret", [NEW, OLD])
async def test_while_a_key_rotates_receivers_with_either_secret_verify(
    store: Store, clock: FakeClock, receiver: VerifyingReceiver, secret: str
) -> None:
    receiver.secret = secret
    await _alert(store, clock, receiver.url("/hook"))
    grace = datetime.now(UTC) + timedelta(hours=1)

    await _deliver(store, clock, _signing(SigningKeys(NEW, OLD, grace)))

    [headers] = receiver.verified
    assert len(headers[SIGNATURE_HEADER].split(" ")) == 2


async def test_once_the_grace_ends_the_old_secret_no_longer_verifies(
    store: Store, clock: FakeClock, receiver: VerifyingReceiver
) -> None:
    receiver.secret = OLD
    await _alert(store, clock, receiver.url("/hook"))
    ended = datetime.now(UTC) - timedelta(seconds=1)

    await _deliver(store, clock, _signing(SigningKeys(NEW, OLD, ended)))

    assert receiver.verified == []
    assert receiver.refused == ["No matching signature found"]
    [notification] = await store.notifications.list_notifications()
    assert notification.status is NotificationStatus.PENDING


async def test_the_legacy_headers_come_along_only_when_asked_for(
    store: Store, clock: FakeClock, receiver: VerifyingReceiver
) -> None:
    url = receiver.url("/hook")
    await _alert(store, clock, url)
    settings = settings_for_tests(
        signing_secret=NEW, signing_legacy_headers=True, allowed_networks=LOOPBACK
    )

    await _deliver(store, clock, build_dispatcher(settings))

    [headers] = receiver.verified
    timestamp = headers[LEGACY_TIMESTAMP_HEADER]
    expected = legacy_signature(NEW.encode(), timestamp, "POST", url, receiver.bodies[0])
    assert headers[LEGACY_SIGNATURE_HEADER] == expected


async def test_a_secret_without_the_prefix_is_its_own_bytes(
    store: Store, clock: FakeClock, receiver: VerifyingReceiver
) -> None:
    receiver.secret = b"s3cret"
    await _alert(store, clock, receiver.url("/hook"))

    await _deliver(store, clock, _signing(SigningKeys("s3cret")))

    assert len(receiver.verified) == 1


@pytest.mark.parametrize(
    ("secret", "reason"),
    [("whsec_not*base64!", "is not base64"), ("whsec_", "followed by no key")],
)
def test_a_malformed_signing_secret_is_refused_without_quoting_it(secret: str, reason: str) -> None:
    with pytest.raises(InvalidConfig) as refused:
        load_settings(_env_file=None, signing_secret_previous=secret)

    assert "CRONPILOT_SIGNING_SECRET_PREVIOUS" in str(refused.value)
    assert reason in str(refused.value)
    assert "not*base64!" not in str(refused.value)


def test_the_grace_s_end_without_a_zone_is_utc() -> None:
    settings = settings_for_tests(signing_previous_until="2026-12-01T08:00:00")

    assert settings.signing_previous_until == datetime(2026, 12, 1, 8, tzinfo=UTC)


def test_a_call_without_an_id_gets_a_fresh_one_each_time() -> None:
    signer = Signer(SigningKeys(NEW))
    now = datetime.now(UTC)

    first, second = (signer.headers(None, "GET", "http://x/", b"", now) for _ in range(2))

    assert first[ID_HEADER] != second[ID_HEADER]
    Webhook(NEW).verify(b"", first, json_parse=False)
