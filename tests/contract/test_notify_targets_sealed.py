"""The secrets of notification targets are sealed at rest on SQLite and PostgreSQL: in the
endpoint's declaration and in every outbox row, which the notifier alone opens."""

from __future__ import annotations

from sqlalchemy import select

from cronpilot.adapters.crypto import SEALED_PREFIX
from cronpilot.adapters.sql import SqlStore
from cronpilot.adapters.sql.tables import endpoints, notifications
from cronpilot.domain.alerts.notify_targets import NotifyTarget, SmtpServer, TargetKind
from cronpilot.domain.model import Response
from cronpilot.usecases.declarations import apply_to_catalog
from tests.contract.builders import LEASE_SECONDS, T0, declaration, spec
from tests.support.finishing import finish_one

SLACK = NotifyTarget(TargetKind.SLACK, url="https://hooks.slack.com/services/T0/B0/sl4ck")
PAGERDUTY = NotifyTarget(
    TargetKind.PAGERDUTY, url="https://events.pagerduty.com/v2/enqueue", routing_key="R0UTE"
)
EMAIL = NotifyTarget(
    TargetKind.EMAIL,
    smtp=SmtpServer(
        "mail.example.com", "a@example.com", ("b@example.com",), 25, False, "u", "p4ss"
    ),
)
SECRETS = ("sl4ck", "R0UTE", "p4ss")


async def test_target_secrets_are_sealed_in_endpoints_and_outbox_and_opened_for_delivery(
    sql_store: SqlStore,
) -> None:
    targets = (SLACK, PAGERDUTY, EMAIL)
    await apply_to_catalog(
        sql_store.catalog,
        [declaration("shop", spec("orders", notify_targets=targets, notify_after=1))],
        T0,
    )
    [claim] = await sql_store.claims.claim_due(T0, "w1", LEASE_SECONDS, 1)
    await finish_one(sql_store.claims, claim, "w1", Response(status_code=500), T0)

    async with sql_store.engine.connect() as conn:
        stored = (await conn.execute(select(endpoints.c.notify_targets))).scalar_one()
        outbox = (await conn.execute(select(notifications.c.target, notifications.c.url))).all()
    for secret in SECRETS:
        assert secret not in repr(stored)
        assert secret not in repr(outbox)
    assert stored[0]["url"].startswith(f"https://hooks.slack.com/{SEALED_PREFIX}")
    assert {url for _, url in outbox} == {
        "https://hooks.slack.com/****",
        "https://events.pagerduty.com/v2/enqueue",
        "smtp://mail.example.com:25 to b@example.com",
    }
    [endpoint] = await sql_store.catalog.list_endpoints()
    assert endpoint.spec.notify_targets == targets
    claimed = await sql_store.notifications.claim_due(T0, "n1", 60, 10)
    assert {n.target for n in claimed} == set(targets)
