"""Sealing what an older cronpilot stored in clear: the secret parameters of URLs (an
endpoint's `?apikey=`, a webhook's `?token=`) were masked in every view but written as given.
`cronpilot db upgrade` seals them once; every write since seals them itself
(`adapters.sql.rows`, `adapters.sql.notifications_repo`)."""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from cronpilot.adapters.crypto import seal_target, seal_url
from cronpilot.adapters.sql.engine import Database
from cronpilot.adapters.sql.keycheck import verify_secret_key
from cronpilot.adapters.sql.tables import endpoints, notifications
from cronpilot.adapters.sql.target_rows import target_from_value, target_value
from cronpilot.domain.log_extra import log_extra
from cronpilot.domain.ports import SecretCipher

logger = logging.getLogger(__name__)


def _sealed_targets(stored: list[dict[str, Any]], cipher: SecretCipher) -> list[dict[str, Any]]:
    return [target_value(seal_target(target_from_value(value), cipher)) for value in stored]


async def seal_stored_urls(db: Database, cipher: SecretCipher) -> int:
    """Seal every secret URL parameter still stored in clear, in one transaction; returns how
    many rows changed. Refuses (`InvalidConfig`) a cipher that is not the database's."""
    await verify_secret_key(db, cipher)
    async with db.write() as conn:
        changed = await _seal_endpoints(conn, cipher) + await _seal_notifications(conn, cipher)
    if changed:
        logger.info(
            "sealed the URL secrets of %d stored rows",
            changed,
            extra=log_extra("seal_urls", count=changed),
        )
    return changed


async def _seal_endpoints(conn: AsyncConnection, cipher: SecretCipher) -> int:
    found = await conn.execute(
        select(endpoints.c.id, endpoints.c.url, endpoints.c.notify, endpoints.c.notify_targets)
    )
    changed = 0
    for row in found.mappings().all():
        values = {
            "url": seal_url(row["url"], cipher),
            "notify": [seal_url(url, cipher) for url in row["notify"]],
            "notify_targets": _sealed_targets(row["notify_targets"], cipher),
        }
        if any(values[name] != row[name] for name in values):
            await conn.execute(update(endpoints).where(endpoints.c.id == row["id"]).values(values))
            changed += 1
    return changed


async def _seal_notifications(conn: AsyncConnection, cipher: SecretCipher) -> int:
    found = await conn.execute(
        select(notifications.c.id, notifications.c.url, notifications.c.target)
    )
    changed = 0
    for row in found.mappings().all():
        target = row["target"]
        values = {
            "url": seal_url(row["url"], cipher),
            "target": None if target is None else _sealed_targets([target], cipher)[0],
        }
        if any(values[name] != row[name] for name in values):
            statement = update(notifications).where(notifications.c.id == row["id"])
            await conn.execute(statement.values(values))
            changed += 1
    return changed
