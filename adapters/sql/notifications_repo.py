"""`NotificationRepository` over SQL: the alerts outbox.

Rows are inserted by the transactions that raise them (`add_notifications`, called from the
fenced finish, the DAG finish and `add_proposal`). The notifier's claim is one statement, as the
endpoints' claim is: on PostgreSQL `UPDATE … WHERE id IN (SELECT … FOR UPDATE SKIP LOCKED)`,
so concurrent notifiers skip each other's rows; SQLite, which has no row locks, runs the same
statement inside `BEGIN IMMEDIATE`, which already excludes every other writer.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Exists, and_, exists, insert, or_, select, update
from sqlalchemy.engine import RowMapping
from sqlalchemy.ext.asyncio import AsyncConnection

from cronpilot.adapters.crypto import open_target, open_url, seal_target, seal_url
from cronpilot.adapters.sql.engine import Database
from cronpilot.adapters.sql.field_rows import field_values, from_fields
from cronpilot.adapters.sql.keyset import newest_first
from cronpilot.adapters.sql.retention import delete_oldest
from cronpilot.adapters.sql.rows import endpoint_from_row, select_endpoints
from cronpilot.adapters.sql.tables import alert_episodes, endpoints, notifications
from cronpilot.adapters.sql.target_rows import target_from_value, target_value
from cronpilot.adapters.sql.upsert import conflict_insert
from cronpilot.domain.alerts.alert_holding import held, may_hold
from cronpilot.domain.alerts.alerts import (
    AlertEvent,
    Notification,
    NotificationStatus,
    Settlement,
    delivered_settlement,
    delivery_order,
    failed_settlement,
    redelivered,
)
from cronpilot.domain.alerts.notify_targets import RESOLVING_EVENTS
from cronpilot.domain.errors import NotificationNotFound
from cronpilot.domain.model import Endpoint
from cronpilot.domain.paging import Cursor
from cronpilot.domain.ports import NotificationRepository, SecretCipher
from cronpilot.domain.runs.retention import DELIVERY_ENDED
from cronpilot.domain.runs.watch import WatchEpisode
from cronpilot.domain.schedule.time_range import TimeRange

_PENDING = NotificationStatus.PENDING.value


def notification_values(notification: Notification, cipher: SecretCipher | None) -> dict[str, Any]:
    """The row of `notification`, its target's secrets and its URL's secret parameters
    sealed."""
    target = notification.target
    sealed = None if target is None else target_value(seal_target(target, cipher))
    return field_values(notification, target=sealed, url=seal_url(notification.url, cipher))


def notification_from_row(row: RowMapping, cipher: SecretCipher | None) -> Notification:
    """The notification of `row`, its target's secrets opened when `cipher` is given."""
    target = row["target"]
    return from_fields(
        Notification,
        row,
        event=AlertEvent(row["event"]),
        status=NotificationStatus(row["status"]),
        url=open_url(row["url"], cipher),
        target=None if target is None else open_target(target_from_value(target), cipher),
    )


async def add_notifications(
    conn: AsyncConnection, raised: Sequence[Notification], cipher: SecretCipher | None
) -> None:
    """Insert `raised` in the caller's transaction; nothing at all (no statement) when empty.
    Targets' secrets are sealed, whether the endpoint they came from was read opened or not."""
    if raised:
        if may_hold(raised):
            raised = held(raised, await _with_upstreams(conn, raised))
        values = [notification_values(n, cipher) for n in raised]
        await conn.execute(insert(notifications), values)


async def _with_upstreams(
    conn: AsyncConnection, raised: Sequence[Notification]
) -> dict[str, Endpoint]:
    """The endpoints of the jobs that raised `raised`, by id, as stored (their upstreams are
    in their jobs): what `alert_holding.held` decides on. Read only when an alert may be held."""
    jobs = {n.job_id for n in raised}
    query = select_endpoints().where(endpoints.c.job_id.in_(jobs))
    rows = (await conn.execute(query)).mappings().all()
    found = (endpoint_from_row(row, None) for row in rows)
    return {endpoint.id: endpoint for endpoint in found}


async def add_episode(
    conn: AsyncConnection,
    dialect: str,
    episode: WatchEpisode,
    raised: Sequence[Notification],
    cipher: SecretCipher | None,
) -> bool:
    """Insert `episode` and, if it took, `raised`, in the caller's transaction. Either unique
    key (subject, kind and start; one open per subject and kind) refuses a second: the worker
    whose insert takes is the one that raises the episode's alerts."""
    statement = (
        conflict_insert(dialect, alert_episodes)
        .values(_episode_values(episode))
        .on_conflict_do_nothing()
        .returning(alert_episodes.c.id)
    )
    if (await conn.execute(statement)).first() is None:
        return False
    await add_notifications(conn, raised, cipher)
    return True


class SqlNotifications(NotificationRepository):
    def __init__(self, db: Database, cipher: SecretCipher | None) -> None:
        self._db = db
        self._cipher = cipher
        """Opens the secrets of the targets that the notifier delivers to."""

    async def claim_due(
        self, now: datetime, worker_id: str, lease_seconds: float, limit: int
    ) -> list[Notification]:
        if limit <= 0:
            return []
        table = notifications.c
        # Mirrors `domain.alerts.alerts.deliverable` in `delivery_order` (proven by `tests/contract/
        # test_rules_contract.py::test_the_outbox_hands_out_what_is_deliverable`), and
        # `precedes`: nothing overtakes a pending row raised before it in its episode.
        is_due = (
            table.status == _PENDING,
            table.next_attempt_at <= now,
            or_(table.lease_until.is_(None), table.lease_until < now),
            ~_earlier_pending(),
        )
        # Every worker looks every few seconds and mostly finds nothing: a read says so without
        # taking SQLite's one write lock from the finishes.
        async with self._db.read() as conn:
            if (await conn.execute(select(table.id).where(*is_due).limit(1))).first() is None:
                return []
        due = (
            select(table.id)
            .where(*is_due)
            .order_by(table.next_attempt_at, table.id)
            .limit(limit)
            # Rendered on PostgreSQL only: SQLite's BEGIN IMMEDIATE already serialises writers.
            .with_for_update(skip_locked=True)
        )
        statement = (
            update(notifications)
            .where(table.id.in_(due.scalar_subquery()))
            .values(lease_owner=worker_id, lease_until=now + timedelta(seconds=lease_seconds))
            .returning(*notifications.c)
        )
        async with self._db.write() as conn:
            rows = (await conn.execute(statement)).mappings().all()
        claimed = [notification_from_row(row, self._cipher) for row in rows]
        return sorted(claimed, key=delivery_order)

    async def mark_delivered(self, notification_id: str, worker_id: str, now: datetime) -> bool:
        return await self._settle(notification_id, worker_id, delivered_settlement(now))

    async def mark_failed(
        self,
        notification_id: str,
        worker_id: str,
        error: str,
        retry_at: datetime | None,
        now: datetime,
    ) -> bool:
        return await self._settle(notification_id, worker_id, failed_settlement(error, retry_at))

    async def _settle(self, notification_id: str, worker_id: str, settlement: Settlement) -> bool:
        """Count an attempt and free the lease, fenced on it, with `settlement` besides: the
        fence of `domain.alerts.settled`, said in the WHERE."""
        table = notifications.c
        statement = (
            update(notifications)
            .where(
                table.id == notification_id,
                table.lease_owner == worker_id,
                table.status == _PENDING,
            )
            .values(
                attempts=table.attempts + 1,
                lease_owner=None,
                lease_until=None,
                **settlement.changes(),
            )
        )
        return await self._db.write_one(statement) == 1

    async def list_notifications(
        self,
        job_id: str | None = None,
        endpoint_id: str | None = None,
        status: NotificationStatus | None = None,
        limit: int = 100,
        after: Cursor | None = None,
        *,
        within: TimeRange | None = None,
        job_ids: Collection[str] | None = None,
    ) -> list[Notification]:
        query = newest_first(
            notifications,
            notifications.c.created_at,
            after,
            within,
            job_id=job_id,
            endpoint_id=endpoint_id,
            status=status,
        )
        if job_ids is not None:
            query = query.where(notifications.c.job_id.in_(sorted(job_ids)))
        async with self._db.read() as conn:
            rows = (await conn.execute(query.limit(limit))).mappings().all()
        # Listed, not delivered: the targets' secrets stay sealed.
        return [notification_from_row(row, None) for row in rows]

    async def prune(self, before: datetime, limit: int) -> int:
        # Mirrors `domain.runs.retention.notification_expired`.
        table = notifications.c
        ended = [status.value for status in DELIVERY_ENDED]
        where = and_(table.status.in_(ended), table.created_at < before)
        oldest = (table.created_at, table.id)
        return await delete_oldest(self._db, notifications, where, oldest, limit)

    async def add(self, raised: Sequence[Notification]) -> None:
        async with self._db.write() as conn:
            await add_notifications(conn, raised, self._cipher)

    async def get_notification(self, notification_id: str) -> Notification:
        query = select(notifications).where(notifications.c.id == notification_id)
        async with self._db.read() as conn:
            row = (await conn.execute(query)).mappings().one_or_none()
        if row is None:
            raise NotificationNotFound(notification_id)
        return notification_from_row(row, None)

    async def redeliver(self, notification_id: str, now: datetime) -> Notification:
        table = notifications.c
        async with self._db.write() as conn:
            query = select(notifications).where(table.id == notification_id).with_for_update()
            row = (await conn.execute(query)).mappings().one_or_none()
            if row is None:
                raise NotificationNotFound(notification_id)
            again = redelivered(notification_from_row(row, None), now)
            # The target stays as stored (sealed): only the delivery state changes.
            values = field_values(again, target=row["target"])
            del values["id"]
            await conn.execute(update(notifications).where(table.id == again.id).values(values))
        return again

    async def watched_due(self, now: datetime, limit: int) -> list[Endpoint]:
        # The condition of `ix_endpoints_watched`, written as it is: the index holds the
        # watched endpoints only, in next_run_at order.
        table = endpoints.c
        query = (
            select_endpoints()
            .where(table.missed_after_seconds.isnot(None), table.next_run_at <= now)
            .order_by(table.next_run_at, table.id)
            .limit(limit)
        )
        async with self._db.read() as conn:
            rows = (await conn.execute(query)).mappings().all()
        return [endpoint_from_row(row, None) for row in rows]

    async def open_episodes(self, kind: AlertEvent) -> list[WatchEpisode]:
        table = alert_episodes.c
        query = (
            select(alert_episodes)
            .where(table.kind == kind.value, table.recovered_at.is_(None))
            .order_by(table.opened_at, table.id)
        )
        async with self._db.read() as conn:
            rows = (await conn.execute(query)).mappings().all()
        return [_episode_from_row(row) for row in rows]

    async def open_episode(self, episode: WatchEpisode, raised: Sequence[Notification]) -> bool:
        async with self._db.write() as conn:
            return await add_episode(conn, self._db.dialect, episode, raised, self._cipher)

    async def close_episode(
        self, episode_id: str, now: datetime, raised: Sequence[Notification]
    ) -> bool:
        table = alert_episodes.c
        statement = (
            update(alert_episodes)
            .where(table.id == episode_id, table.recovered_at.is_(None))
            .values(recovered_at=now)
            .returning(table.id)
        )
        async with self._db.write() as conn:
            if (await conn.execute(statement)).first() is None:
                return False
            await add_notifications(conn, raised, self._cipher)
        return True

    async def prune_episodes(self, before: datetime, limit: int) -> int:
        table = alert_episodes.c
        where = and_(table.recovered_at.isnot(None), table.opened_at < before)
        oldest = (table.opened_at, table.id)
        return await delete_oldest(self._db, alert_episodes, where, oldest, limit)


def _earlier_pending() -> Exists:
    """`domain.alerts.alerts.precedes` in SQL: a pending row of the same episode and destination,
    raised before the outer row (or with it, opening what the outer row resolves)."""
    outer, earlier = notifications.c, notifications.alias("earlier").c
    resolving = sorted(RESOLVING_EVENTS)
    return exists().where(
        earlier.episode_key == outer.episode_key,
        earlier.status == _PENDING,
        earlier.id != outer.id,
        or_(
            earlier.created_at < outer.created_at,
            and_(
                earlier.created_at == outer.created_at,
                earlier.event.not_in(resolving),
                outer.event.in_(resolving),
            ),
        ),
    )


def _episode_values(episode: WatchEpisode) -> dict[str, Any]:
    return {
        "id": episode.id,
        "subject": episode.subject,
        "endpoint_id": episode.endpoint_id,
        "kind": episode.kind.value,
        "started_at": episode.started_at,
        "opened_at": episode.opened_at,
        "recovered_at": episode.recovered_at,
    }


def _episode_from_row(row: RowMapping) -> WatchEpisode:
    return WatchEpisode(
        id=row["id"],
        subject=row["subject"],
        kind=AlertEvent(row["kind"]),
        started_at=row["started_at"],
        opened_at=row["opened_at"],
        recovered_at=row["recovered_at"],
    )
