"""Notification targets delivered through the outbox to real servers on 127.0.0.1: Slack, Teams
and PagerDuty receivers over HTTP, an SMTP server (aiosmtpd) for e-mail, one that never answers,
and the address guard at delivery. Every store: SQL stores keep the targets' secrets sealed."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field, replace
from email import message_from_bytes
from email.message import Message
from email.utils import parsedate_to_datetime
from typing import Any

import pytest
from aiohttp import web
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP as SmtpSession
from aiosmtpd.smtp import AuthResult, Envelope, LoginPassword, Session

from cronpilot.adapters.bootstrap import notifier_config
from cronpilot.adapters.http.dispatcher import AiohttpDispatcher
from cronpilot.adapters.mail import SmtpMailer
from cronpilot.adapters.views.notifications import target_kind
from cronpilot.domain.alerts.alerts import DeliveryPolicy, NotificationStatus
from cronpilot.domain.alerts.notify_targets import MailMessage, NotifyTarget, SmtpServer, TargetKind
from cronpilot.domain.model import Response
from cronpilot.domain.ports import Store
from cronpilot.scheduler.notifier import Notifier
from cronpilot.usecases.alert_delivery import redeliver, send_test
from cronpilot.usecases.declarations import apply_to_catalog
from tests.contract.builders import LEASE_SECONDS, declaration, spec
from tests.support.clock import FakeClock
from tests.support.finishing import finish_one
from tests.support.hostile_server import unused_port
from tests.support.settings import settings_for_tests

LOOPBACK = ["127.0.0.1/32"]
FAILED = Response(status_code=503, error_message="HTTP 503 Service Unavailable")
OK = Response(status_code=200, body={"ok": True})
ROUTING_KEY = "R0UT1NG-k3y"
PASSWORD = "sm7p-p4ss"


@dataclass
class Receivers:
    """One HTTP server, a path per kind: records the JSON each path receives."""

    received: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    port: int = 0
    slow_triggers: float = 0.0
    """How long a PagerDuty trigger takes to be taken: a resolve sent beside it overtakes it."""
    refusals: int = 0
    """How many requests to refuse (HTTP 500) before taking any."""

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}/{path}"

    async def _take(self, request: web.Request) -> web.Response:
        document = await request.json()
        if self.refusals > 0:
            self.refusals -= 1
            return web.json_response({"status": "error"}, status=500)
        if document.get("event_action") == "trigger":
            await asyncio.sleep(self.slow_triggers)
        # Recorded once taken, in the order the receiver took them.
        self.received.setdefault(request.match_info["path"], []).append(document)
        # PagerDuty answers 202 Accepted; a chat webhook 200.
        return web.json_response({"status": "success"}, status=202)


@pytest.fixture
async def receivers() -> AsyncIterator[Receivers]:
    found = Receivers()
    app = web.Application()
    app.add_routes([web.post("/{path}", found._take)])
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    found.port = runner.addresses[0][1]
    try:
        yield found
    finally:
        await runner.cleanup()


@dataclass
class Mailbox:
    messages: list[tuple[Envelope, Message]] = field(default_factory=list)
    logins: list[tuple[str, str]] = field(default_factory=list)

    async def handle_DATA(self, server: SmtpSession, session: Session, envelope: Envelope) -> str:
        assert isinstance(envelope.content, bytes)
        self.messages.append((envelope, message_from_bytes(envelope.content)))
        return "250 OK"

    def authenticate(
        self, server: SmtpSession, session: Session, envelope: Envelope, mechanism: str, data: Any
    ) -> AuthResult:
        assert isinstance(data, LoginPassword)
        self.logins.append((data.login.decode(), data.password.decode()))
        return AuthResult(success=data.password.decode() == PASSWORD)


@pytest.fixture
def mailbox() -> Iterator[tuple[Mailbox, int]]:
    box = Mailbox()
    controller = Controller(
        box,
        hostname="127.0.0.1",
        port=unused_port(),
        authenticator=box.authenticate,
        auth_require_tls=False,
    )
    controller.start()
    try:
        yield box, controller.port
    finally:
        controller.stop()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def _notifier(
    store: Store, dispatcher: AiohttpDispatcher, clock: FakeClock, **config: Any
) -> Notifier:
    settings = settings_for_tests(worker_id="n1")
    made = replace(notifier_config(settings), **config)
    return Notifier(store, dispatcher, clock, made, mailer=SmtpMailer(LOOPBACK))


async def _run(store: Store, clock: FakeClock, response: Response) -> None:
    [claim] = await store.claims.claim_due(clock.now(), "w1", LEASE_SECONDS, 1)
    await finish_one(store.claims, claim, "w1", response, clock.now())


async def _declare(store: Store, clock: FakeClock, *targets: NotifyTarget) -> None:
    orders = spec("orders", notify_targets=targets, notify_after=1)
    await apply_to_catalog(store.catalog, [declaration("shop", orders)], clock.now())


async def test_slack_teams_and_pagerduty_receive_their_payloads_and_pagerduty_resolves(
    store: Store, dispatcher: AiohttpDispatcher, clock: FakeClock, receivers: Receivers
) -> None:
    await _declare(
        store,
        clock,
        NotifyTarget(TargetKind.SLACK, url=receivers.url("slack")),
        NotifyTarget(TargetKind.TEAMS, url=receivers.url("teams"), events=("failing",)),
        NotifyTarget(TargetKind.PAGERDUTY, url=receivers.url("pagerduty"), routing_key=ROUTING_KEY),
    )
    notifier = _notifier(store, dispatcher, clock)

    await _run(store, clock, FAILED)
    assert await notifier.deliver_due() == 3
    clock.advance(3600)  # past the backoff of the failed run
    await _run(store, clock, OK)
    assert await notifier.deliver_due() == 2

    slack_failing, slack_recovered = receivers.received["slack"]
    assert slack_failing["text"] == "[cronpilot] shop/orders is failing (1 consecutive failures)"
    assert [block["type"] for block in slack_failing["blocks"]] == ["header", "section"]
    assert slack_recovered["text"] == "[cronpilot] shop/orders recovered from failing"
    [teams] = receivers.received["teams"]
    assert teams["attachments"][0]["content"]["type"] == "AdaptiveCard"
    trigger, resolve = receivers.received["pagerduty"]
    assert (trigger["event_action"], trigger["routing_key"]) == ("trigger", ROUTING_KEY)
    assert trigger["payload"]["severity"] == "error"
    assert resolve == {
        "routing_key": ROUTING_KEY,
        "dedup_key": trigger["dedup_key"],
        "event_action": "resolve",
    }
    listed = await store.notifications.list_notifications()
    assert {n.status for n in listed} == {NotificationStatus.DELIVERED}
    assert all(ROUTING_KEY not in n.url for n in listed)


async def test_an_email_reaches_the_smtp_server_with_a_login(
    store: Store,
    dispatcher: AiohttpDispatcher,
    clock: FakeClock,
    mailbox: tuple[Mailbox, int],
) -> None:
    box, port = mailbox
    server = SmtpServer(
        "127.0.0.1",
        "cron@example.com",
        ("ops@example.com", "oncall@example.com"),
        port,
        username="cron",
        password=PASSWORD,
    )
    await _declare(store, clock, NotifyTarget(TargetKind.EMAIL, smtp=server))
    notifier = _notifier(store, dispatcher, clock)

    await _run(store, clock, FAILED)
    assert await notifier.deliver_due() == 1

    [(envelope, message)] = box.messages
    assert envelope.mail_from == "cron@example.com"
    assert envelope.rcpt_tos == ["ops@example.com", "oncall@example.com"]
    assert message["Subject"] == "[cronpilot] shop/orders is failing (1 consecutive failures)"
    assert message["To"] == "ops@example.com, oncall@example.com"
    body = message.get_payload(decode=True)
    assert isinstance(body, bytes)
    assert b"Endpoint: shop/orders" in body
    assert box.logins == [("cron", PASSWORD)]
    [delivered] = await store.notifications.list_notifications()
    # RFC 5322: the event's time, and an id that stays the same on a retry.
    assert parsedate_to_datetime(message["Date"]) == clock.now()
    assert message["Message-ID"] == f"<cronpilot.{delivered.id}@example.com>"
    assert delivered.status is NotificationStatus.DELIVERED
    assert delivered.url == f"smtp://127.0.0.1:{port} to ops@example.com, oncall@example.com"


@pytest.fixture
async def silent_smtp() -> AsyncIterator[int]:
    """A server that accepts connections and never says a word (no greeting)."""
    held: list[asyncio.StreamWriter] = []

    async def hold(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        for writer in held:
            writer.close()
        server.close()
        await server.wait_closed()


async def test_an_smtp_server_that_never_answers_costs_one_timeout_per_attempt_then_fails(
    store: Store,
    dispatcher: AiohttpDispatcher,
    clock: FakeClock,
    silent_smtp: int,
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = SmtpServer("127.0.0.1", "cron@example.com", ("ops@example.com",), silent_smtp)
    await _declare(store, clock, NotifyTarget(TargetKind.EMAIL, smtp=server))
    policy = DeliveryPolicy(attempts=2)
    notifier = _notifier(store, dispatcher, clock, timeout_seconds=0.2, policy=policy)
    await _run(store, clock, FAILED)
    why = f"SMTP server 127.0.0.1:{silent_smtp} did not answer within 0.2s"

    with caplog.at_level(logging.WARNING, logger="cronpilot.scheduler.notifier"):
        assert await notifier.deliver_due() == 1
    [pending] = await store.notifications.list_notifications()
    assert (pending.status, pending.attempts, pending.last_error) == (
        NotificationStatus.PENDING,
        1,
        why,
    )
    [line] = [record.getMessage() for record in caplog.records]
    assert line.startswith(f"failing alert not delivered ({why}); next try ")
    assert "\n" not in line

    clock.advance(policy.first_delay_seconds)
    assert await notifier.deliver_due() == 1
    [failed] = await store.notifications.list_notifications()
    assert (failed.status, failed.attempts) == (NotificationStatus.FAILED, 2)


async def test_the_mailer_connects_only_to_an_address_the_guard_allows() -> None:
    server = SmtpServer("localhost", "cron@example.com", ("ops@example.com",), unused_port())

    why = await SmtpMailer([]).send(server, MailMessage("s", "t"), 1.0)

    assert why is not None
    assert why.startswith(f"SMTP server localhost:{server.port} refused by the address guard: ")
    assert "is loopback" in why


async def test_a_notification_keeps_the_secrets_of_its_target_out_of_json_and_logs(
    store: Store,
    dispatcher: AiohttpDispatcher,
    clock: FakeClock,
    receivers: Receivers,
    caplog: pytest.LogCaptureFixture,
) -> None:
    slack = receivers.url("sl4ck-s3cr3t")
    await _declare(store, clock, NotifyTarget(TargetKind.SLACK, url=slack))
    await _run(store, clock, FAILED)

    with caplog.at_level(logging.INFO):
        assert await _notifier(store, dispatcher, clock).deliver_due() == 1

    [listed] = await store.notifications.list_notifications()
    assert listed.url == f"http://127.0.0.1:{receivers.port}/****"
    assert "sl4ck-s3cr3t" not in caplog.text
    assert json.dumps(listed.payload).find("sl4ck") == -1


async def _missed_and_recovered_at_once(
    store: Store, clock: FakeClock, receivers: Receivers
) -> None:
    """A worker back after an hour: its claim tells the slot missed and recovered at once."""
    pagerduty = NotifyTarget(
        TargetKind.PAGERDUTY, url=receivers.url("pagerduty"), routing_key=ROUTING_KEY
    )
    orders = spec("orders", notify_targets=(pagerduty,), missed_after_seconds=600)
    await apply_to_catalog(store.catalog, [declaration("shop", orders)], clock.now())
    clock.advance(3600)
    await _run(store, clock, OK)


def _actions(receivers: Receivers) -> list[tuple[str, str]]:
    return [(d["event_action"], d["dedup_key"]) for d in receivers.received["pagerduty"]]


async def test_a_resolve_never_overtakes_its_trigger_sent_in_one_batch(
    store: Store, dispatcher: AiohttpDispatcher, clock: FakeClock, receivers: Receivers
) -> None:
    await _missed_and_recovered_at_once(store, clock, receivers)
    receivers.slow_triggers = 0.3
    notifier = _notifier(store, dispatcher, clock)

    delivered = [await notifier.deliver_due() for _ in range(3)]

    assert delivered == [1, 1, 0]
    (trigger, key), (resolve, same) = _actions(receivers)
    assert (trigger, resolve, same) == ("trigger", "resolve", key)


async def test_a_resolve_waits_for_its_trigger_retried_by_another_worker(
    store: Store, dispatcher: AiohttpDispatcher, clock: FakeClock, receivers: Receivers
) -> None:
    await _missed_and_recovered_at_once(store, clock, receivers)
    receivers.refusals = 1
    first = _notifier(store, dispatcher, clock)
    other = notifier_config(settings_for_tests(worker_id="n2"))
    second = Notifier(store, dispatcher, clock, other)

    assert await first.deliver_due() == 1  # the trigger, refused: tried again in 2 s
    assert await second.deliver_due() == 0  # the resolve waits for it
    clock.advance(DeliveryPolicy().first_delay_seconds)
    assert await second.deliver_due() == 1
    assert await first.deliver_due() == 1

    assert [action for action, _ in _actions(receivers)] == ["trigger", "resolve"]
    listed = await store.notifications.list_notifications()
    assert {n.status for n in listed} == {NotificationStatus.DELIVERED}


async def test_a_test_alert_reaches_every_target_and_a_failed_one_is_redelivered(
    store: Store, dispatcher: AiohttpDispatcher, clock: FakeClock, receivers: Receivers
) -> None:
    await _declare(
        store,
        clock,
        NotifyTarget(TargetKind.SLACK, url=receivers.url("slack"), events=("failing",)),
        NotifyTarget(TargetKind.WEBHOOK, url=receivers.url("hook")),
    )
    notifier = _notifier(store, dispatcher, clock, policy=DeliveryPolicy(attempts=1))
    receivers.refusals = 1  # the first delivery is refused, and given up at once

    sent = await send_test(store.unit_of_work, "shop/orders", "cli:ann@host", clock.now())
    assert await notifier.deliver_due() == 2
    [failed] = await store.notifications.list_notifications(status=NotificationStatus.FAILED)
    again = await redeliver(store.unit_of_work, failed.id, "cli:ann@host", clock.now())
    assert await notifier.deliver_due() == 1

    assert sorted(target_kind(n) for n in sent) == ["slack", "webhook"]
    assert (again.status, again.attempts) == (NotificationStatus.PENDING, 0)
    received = {
        path: [d.get("text") or d.get("event") for d in got]
        for path, got in receivers.received.items()
    }
    assert received == {
        "slack": [
            "[cronpilot] shop/orders sends a test alert: this destination takes cronpilot's alerts"
        ],
        "hook": ["test"],
    }
    listed = await store.notifications.list_notifications()
    assert {n.status for n in listed} == {NotificationStatus.DELIVERED}
    actions = [(e.action, e.target) for e in await store.access.list_audit()]
    assert sorted(actions) == [("notify_test", "shop/orders"), ("redeliver", failed.id)]
