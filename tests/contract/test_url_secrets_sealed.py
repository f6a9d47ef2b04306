"""The secret parameters of URLs are sealed at rest on SQLite and PostgreSQL, like secret
headers: an endpoint's `?apikey=`, a webhook's `?token=` (in `notify.urls`, in a webhook
target and in each outbox row), opened for the call and the delivery; `db upgrade` seals what
an older version stored in clear."""

from __future__ import annotations

from sqlalchemy import select, update

from cronpilot.adapters.crypto import SEALED_PREFIX
from cronpilot.adapters.sql import SqlStore
from cronpilot.adapters.sql.engine import Database
from cronpilot.adapters.sql.sealing import seal_stored_urls
from cronpilot.adapters.sql.tables import endpoints, notifications
from cronpilot.domain.alerts.notify_targets import NotifyTarget, TargetKind
from cronpilot.domain.model import Response
from cronpilot.domain.ports import SecretCipher
from cronpilot.usecases.declarations import apply_to_catalog
from tests.contract.builders import LEASE_SECONDS, T0, declaration, spec
from tests.support.finishing import finish_one

URL = "https://api.example.com/orders?page=2&apikey=4p1k3y&sig=s1gn3d"
HOOK = "https://hooks.example.com/in?token=h00kt0k"
TARGET = NotifyTarget(TargetKind.WEBHOOK, url="https://hooks.example.com/t?access_token=t4rg3t")
SECRETS = ("4p1k3y", "s1gn3d", "h00kt0k", "t4rg3t")


async def _raw(sql_store: SqlStore) -> str:
    async with sql_store.engine.connect() as conn:
        stored = (
            await conn.execute(
                select(endpoints.c.url, endpoints.c.notify, endpoints.c.notify_targets)
            )
        ).all()
        outbox = (await conn.execute(select(notifications.c.target, notifications.c.url))).all()
    return repr(stored) + repr(outbox)


async def _declare_and_fail(sql_store: SqlStore) -> None:
    declared = spec("orders", url=URL, notify=(HOOK,), notify_targets=(TARGET,), notify_after=1)
    await apply_to_catalog(sql_store.catalog, [declaration("shop", declared)], T0)
    [claim] = await sql_store.claims.claim_due(T0, "w1", LEASE_SECONDS, 1)
    assert claim.endpoint.spec.url == URL
    await finish_one(sql_store.claims, claim, "w1", Response(status_code=500), T0)


async def test_url_secrets_are_sealed_at_rest_and_opened_to_call_and_deliver(
    sql_store: SqlStore,
) -> None:
    await _declare_and_fail(sql_store)

    raw = await _raw(sql_store)
    [endpoint] = await sql_store.catalog.list_endpoints()
    claimed = await sql_store.notifications.claim_due(T0, "n1", 60, 10)

    assert [secret for secret in SECRETS if secret in raw] == []
    assert f"apikey={SEALED_PREFIX}" in raw and "page=2&" in raw
    assert (endpoint.spec.url, endpoint.spec.notify) == (URL, (HOOK,))
    assert endpoint.spec.notify_targets == (TARGET,)
    assert {n.url for n in claimed if n.target is None} == {HOOK}
    assert {n.target for n in claimed if n.target is not None} == {TARGET}


async def test_db_upgrade_seals_what_an_older_version_stored_in_clear(
    sql_store: SqlStore, sql_url: str, cipher: SecretCipher
) -> None:
    await _declare_and_fail(sql_store)
    async with sql_store.engine.begin() as conn:
        await conn.execute(update(endpoints).values(url=URL, notify=[HOOK]))
        await conn.execute(
            update(notifications).where(notifications.c.target.is_(None)).values(url=HOOK)
        )
    assert "4p1k3y" in await _raw(sql_store)

    db = Database(sql_store.engine, sql_url)
    changed = await seal_stored_urls(db, cipher)
    again = await seal_stored_urls(db, cipher)

    assert (changed, again) == (2, 0)
    assert [secret for secret in SECRETS if secret in await _raw(sql_store)] == []
    [endpoint] = await sql_store.catalog.list_endpoints()
    assert (endpoint.spec.url, endpoint.spec.notify) == (URL, (HOOK,))
