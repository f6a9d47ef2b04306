"""Delivering the alerts outbox: every scheduler worker runs a notifier in a task of its own,
beside (never inside) its scheduling loop.

The notifier claims due notifications from the store (so that many workers share the work and
none delivers a row another holds), POSTs each event's JSON to its webhook through a
`Dispatcher` (the address guard checks every hop, and calls are signed by the Standard Webhooks
spec when a signing secret is set), or the message of its target's kind
(`domain.alerts.notify_targets`: Slack, Teams, PagerDuty over the same dispatcher, e-mail through a
`Mailer`), and records the outcome: delivered on a 2xx answer (or a mail server's acceptance),
else tried again later as `DeliveryPolicy` says, until it gives up. Delivery is at least once:
a worker that stops or dies mid-delivery leaves a lease that expires, and the row is delivered
again; each event carries an `id` (and its signed `webhook-id` is that id) so that a receiver
can drop repeats.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from cronpilot.domain.alerts.alerts import DeliveryPolicy, Notification, delivery_error
from cronpilot.domain.alerts.notify_targets import (
    TargetKind,
    address,
    email_message,
    http_body,
    with_links,
)
from cronpilot.domain.errors import CronpilotError
from cronpilot.domain.log_extra import log_extra
from cronpilot.domain.model import HttpRequest
from cronpilot.domain.ports.bundles import NotifierRepositories
from cronpilot.domain.ports.clock import Clock
from cronpilot.domain.ports.dispatch import Dispatcher, Mailer
from cronpilot.domain.ports.telemetry import Telemetry
from cronpilot.domain.runs.telemetry import NO_TELEMETRY
from cronpilot.runtime.timing import Periodic

log = logging.getLogger(__name__)

EVENT_HEADER = "X-Cronpilot-Event"
MAX_ANSWER_BYTES = 10_000
"""A webhook's answer is not kept: it is read only this far."""


@dataclass(frozen=True, slots=True)
class NotifierConfig:
    """Made only in `adapters/configs.py`, from `Settings` (which holds the defaults)."""

    worker_id: str
    concurrency: int
    """Deliveries in flight at once (and notifications claimed per round trip)."""
    lease_seconds: float
    """How long a claimed notification stays this worker's: longer than a delivery takes."""
    poll_seconds: float
    """How often to look for due notifications when the last look found few."""
    timeout_seconds: float
    """How long a webhook may take to answer."""
    policy: DeliveryPolicy = field(default_factory=DeliveryPolicy)
    """When to try again and when to give up: a rule of the domain (`domain.alerts.alerts`)."""
    public_url: str | None = None
    """Where the console is reached (`CRONPILOT_PUBLIC_URL`): messages link back to it."""


class Notifier:
    def __init__(
        self,
        store: NotifierRepositories,
        dispatcher: Dispatcher,
        clock: Clock,
        config: NotifierConfig,
        *,
        telemetry: Telemetry = NO_TELEMETRY,
        mailer: Mailer | None = None,
    ) -> None:
        self._store = store
        self._mailer = mailer
        self._telemetry = telemetry
        self._dispatcher = dispatcher
        self._clock = clock
        self._config = config
        # The notifier's records keep the action names they had before the shared timer.
        self._timer = Periodic(
            "notify",
            clock,
            config.poll_seconds,
            self._deliver_turn,
            cut=True,
            failed_action="notify_store_error",
            crashed_action="notify_internal_error",
        )

    async def run(self, stop: asyncio.Event) -> None:
        """Deliver until `stop` is set, then stop at once: deliveries cut short are delivered
        again once their lease expires."""
        await self._timer.run(stop)

    async def deliver_due(self) -> int:
        """Claim up to `concurrency` due notifications and deliver them side by side; returns
        how many were claimed."""
        config = self._config
        claimed = await self._store.notifications.claim_due(
            self._clock.now(), config.worker_id, config.lease_seconds, config.concurrency
        )
        await asyncio.gather(*(self._deliver(notification) for notification in claimed))
        return len(claimed)

    async def _deliver_turn(self) -> bool:
        """One look; True when it took a full batch, so that the next comes at once."""
        return await self.deliver_due() >= self._config.concurrency

    async def _send(self, notification: Notification) -> str | None:
        """Send `notification` to its webhook or target: None once taken, else why not."""
        target, timeout = notification.target, self._config.timeout_seconds
        document = with_links(notification.payload, self._config.public_url)
        if target is not None and target.kind is TargetKind.EMAIL:
            if self._mailer is None or target.smtp is None:
                return "no mailer: this notifier sends no e-mail"
            message = email_message(document, notification.id)
            return await self._mailer.send(target.smtp, message, timeout)
        request = HttpRequest(
            method="POST",
            url=notification.url if target is None else target.url,
            headers={EVENT_HEADER: notification.event.value},
            body=document if target is None else http_body(target, document),
            timeout_seconds=timeout,
            max_response_bytes=MAX_ANSWER_BYTES,
            message_id=_event_id(notification),
        )
        error = delivery_error(await self._dispatcher.dispatch(request))
        if error is None or target is None:
            return error
        # An error quoting a chat webhook's URL must not keep its secret (its path).
        return error.replace(target.url, address(target))

    async def _deliver(self, notification: Notification) -> None:
        config = self._config
        error = await self._send(notification)
        now = self._clock.now()
        # A webhook's path is often its secret (chat services put the token there): logs name
        # the host only.
        target = notification.target
        about = {
            "notification_id": notification.id,
            "endpoint_id": notification.endpoint_id,
            "event": notification.event.value,
            "host": urlsplit(notification.url if target is None else address(target)).hostname,
        }
        try:
            if error is None:
                kept = await self._store.notifications.mark_delivered(
                    notification.id, config.worker_id, now
                )
                self._telemetry.notified(notification, "delivered")
                log.info(
                    "delivered %s alert",
                    notification.event,
                    extra=log_extra("notify_delivered", **about),
                )
            else:
                retry_at = config.policy.retry_at(notification.attempts + 1, now)
                kept = await self._store.notifications.mark_failed(
                    notification.id, config.worker_id, error, retry_at, now
                )
                self._telemetry.notified(notification, "failed" if retry_at is None else "retry")
                log.warning(
                    "%s alert not delivered (%s); %s",
                    notification.event,
                    error,
                    "giving up" if retry_at is None else f"next try {retry_at.isoformat()}",
                    extra=log_extra(
                        "notify_failed" if retry_at is None else "notify_retry", **about
                    ),
                )
        except CronpilotError as store_error:
            # The outcome is lost with the store; the lease expires and the row is tried again.
            log.warning(
                "cannot record a delivery: %s",
                store_error,
                extra=log_extra("notify_unrecorded", **about),
            )
            return
        if not kept:
            log.warning(
                "lease on a notification lost during its delivery",
                extra=log_extra("notify_lease_lost", **about),
            )


def _event_id(notification: Notification) -> str:
    """The event's id, which its every delivery (to any webhook, at any attempt) carries as its
    signed `webhook-id`, so that a receiver drops one it has seen."""
    payload = notification.payload
    event_id = payload.get("id") if isinstance(payload, dict) else None
    return event_id if isinstance(event_id, str) else notification.id
