"""An admin's hand on alert delivery: send a test alert to an endpoint's webhooks and targets,
or send a notification again; each audited."""

from __future__ import annotations

import logging
from datetime import datetime

from cronpilot.domain.access.audit import audit_entry
from cronpilot.domain.alerts.alerts import Notification, test_notifications
from cronpilot.domain.errors import InvalidConfig
from cronpilot.domain.log_extra import log_extra
from cronpilot.domain.ports import UnitOfWorkFactory

log = logging.getLogger(__name__)


async def send_test(
    uow: UnitOfWorkFactory, ref: str, actor: str, now: datetime
) -> list[Notification]:
    """Write a `test` event for each webhook and target of the endpoint `ref` to the outbox,
    which the workers' notifiers deliver as any alert; returns the rows. Raises
    `EndpointNotFound`, or `InvalidConfig` when the endpoint notifies nowhere."""
    async with uow() as tx:
        endpoint = await tx.catalog.get_endpoint(ref)
        raised = test_notifications(endpoint, now)
        if not raised:
            raise InvalidConfig("notify", f"{endpoint.ref} has no webhook or target to test")
        await tx.notifications.add(raised)
        where = ", ".join(n.url for n in raised)
        await tx.access.record(audit_entry(actor, "notify_test", endpoint.ref, where, now))
        await tx.commit()
    log.info(
        "test alert for %s written", endpoint.ref, extra=log_extra("notify_test", count=len(raised))
    )
    return raised


async def redeliver(
    uow: UnitOfWorkFactory, notification_id: str, actor: str, now: datetime
) -> Notification:
    """Send the notification again from `now` (`domain.alerts.alerts.redelivered`: a failed, held or
    delivered one is pending again with a fresh set of attempts). Raises
    `NotificationNotFound`."""
    async with uow() as tx:
        again = await tx.notifications.redeliver(notification_id, now)
        detail = f"{again.event.value} to {again.url}"
        await tx.access.record(audit_entry(actor, "redeliver", again.id, detail, now))
        await tx.commit()
    log.info("notification %s sent again", again.id, extra=log_extra("redeliver"))
    return again
