"""`MemoryNotifications`: the alerts outbox over the `MemoryState` dict, leased as the SQL store
leases its rows (the state's lock stands in for SKIP LOCKED)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from cronpilot.domain.alerts.alerts import (
    AlertEvent,
    Notification,
    NotificationStatus,
    Settlement,
    deliverable,
    delivered_settlement,
    delivery_order,
    failed_settlement,
    precedes,
    redelivered,
    settled,
)
from cronpilot.domain.errors import NotificationNotFound
from cronpilot.domain.model import Endpoint
from cronpilot.domain.paging import Cursor, follows
from cronpilot.domain.ports import NotificationRepository
from cronpilot.domain.runs.retention import notification_expired
from cronpilot.domain.runs.watch import WatchEpisode
from cronpilot.domain.schedule.time_range import TimeRange, falls_in

if TYPE_CHECKING:
    from tests.support.memory_store.store import MemoryState


class MemoryNotifications(NotificationRepository):
    def __init__(self, state: MemoryState) -> None:
        self._state = state

    async def claim_due(
        self, now: datetime, worker_id: str, lease_seconds: float, limit: int
    ) -> list[Notification]:
        until = now + timedelta(seconds=lease_seconds)
        async with self._state.lock:
            held = self._state.notifications.values()
            due = sorted(
                (n for n in held if deliverable(n, now) and not any(precedes(m, n) for m in held)),
                key=delivery_order,
            )
            claimed = [
                replace(n, lease_owner=worker_id, lease_until=until) for n in due[: max(limit, 0)]
            ]
            for notification in claimed:
                self._state.notifications[notification.id] = notification
        return claimed

    async def add(self, raised: Sequence[Notification]) -> None:
        async with self._state.lock:
            self._state.add_notifications(raised)

    async def get_notification(self, notification_id: str) -> Notification:
        found = self._state.notifications.get(notification_id)
        if found is None:
            raise NotificationNotFound(notification_id)
        return found

    async def redeliver(self, notification_id: str, now: datetime) -> Notification:
        async with self._state.lock:
            held = self._state.notifications.get(notification_id)
            if held is None:
                raise NotificationNotFound(notification_id)
            again = self._state.notifications[notification_id] = redelivered(held, now)
        return again

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
        async with self._state.lock:
            held = self._state.notifications.get(notification_id)
            after = None if held is None else settled(held, worker_id, settlement)
            if after is None:
                return False
            self._state.notifications[notification_id] = after
        return True

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
        chosen = [
            n
            for n in self._state.notifications.values()
            if (job_id is None or n.job_id == job_id)
            and (job_ids is None or n.job_id in job_ids)
            and (endpoint_id is None or n.endpoint_id == endpoint_id)
            and (status is None or n.status is status)
            and falls_in(within, n.created_at)
            and follows(n.created_at, n.id, after)
        ]
        chosen.sort(key=lambda n: (n.created_at, n.id), reverse=True)
        return chosen[:limit]

    async def prune(self, before: datetime, limit: int) -> int:
        async with self._state.lock:
            doomed = sorted(
                (n for n in self._state.notifications.values() if notification_expired(n, before)),
                key=lambda n: (n.created_at, n.id),
            )[: max(limit, 0)]
            for notification in doomed:
                del self._state.notifications[notification.id]
        return len(doomed)

    async def watched_due(self, now: datetime, limit: int) -> list[Endpoint]:
        due = [
            e
            for e in self._state.endpoints.values()
            if e.spec.missed_after_seconds is not None
            and e.next_run_at is not None
            and e.next_run_at <= now
        ]
        due.sort(key=lambda e: (e.next_run_at, e.id))
        return due[: max(limit, 0)]

    async def open_episodes(self, kind: AlertEvent) -> list[WatchEpisode]:
        found = [
            e for e in self._state.episodes.values() if e.kind is kind and e.recovered_at is None
        ]
        return sorted(found, key=lambda e: (e.opened_at, e.id))

    async def open_episode(self, episode: WatchEpisode, raised: Sequence[Notification]) -> bool:
        async with self._state.lock:
            return self._state.add_episode(episode, raised)

    async def close_episode(
        self, episode_id: str, now: datetime, raised: Sequence[Notification]
    ) -> bool:
        async with self._state.lock:
            held = self._state.episodes.get(episode_id)
            if held is None or held.recovered_at is not None:
                return False
            self._state.episodes[episode_id] = replace(held, recovered_at=now)
            self._state.add_notifications(raised)
        return True

    async def prune_episodes(self, before: datetime, limit: int) -> int:
        async with self._state.lock:
            doomed = sorted(
                (
                    e
                    for e in self._state.episodes.values()
                    if e.recovered_at is not None and e.opened_at < before
                ),
                key=lambda e: (e.opened_at, e.id),
            )[: max(limit, 0)]
            for episode in doomed:
                del self._state.episodes[episode.id]
        return len(doomed)
