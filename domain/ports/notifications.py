"""The alerts outbox and the watch's episodes (missed runs, no workers)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from cronpilot.domain.alerts.alerts import AlertEvent, Notification, NotificationStatus
    from cronpilot.domain.model import Endpoint
    from cronpilot.domain.paging import Cursor
    from cronpilot.domain.runs.watch import WatchEpisode
    from cronpilot.domain.schedule.time_range import TimeRange


class NotificationRepository(Protocol):
    """The alerts outbox. Rows are written with the run (`ClaimRepository.finish_many`)
    or the proposal (`PlannerRepository.add_proposal`) that
    raised them; a notifier claims them, delivers them and records the outcome here. Delivery
    is at least once: a worker that dies mid-delivery leaves a lease that expires."""

    async def claim_due(
        self, now: datetime, worker_id: str, lease_seconds: float, limit: int
    ) -> list[Notification]:
        """Atomically lease up to `limit` pending notifications whose next attempt is due by
        `now` and that no live lease holds, oldest next attempt first (an expired lease may be
        claimed again). Concurrent callers never get the same row (SKIP LOCKED on PostgreSQL).
        The rows come back with their lease."""
        ...

    async def mark_delivered(self, notification_id: str, worker_id: str, now: datetime) -> bool:
        """Count the attempt and mark the notification delivered at `now`, freeing its lease.
        False, and nothing written, when `worker_id` no longer holds the lease (or the row is
        gone with its endpoint)."""
        ...

    async def mark_failed(
        self,
        notification_id: str,
        worker_id: str,
        error: str,
        retry_at: datetime | None,
        now: datetime,
    ) -> bool:
        """Count the failed attempt and keep `error`, freeing the lease: pending again from
        `retry_at`, or `failed` for good when `retry_at` is None. False, and nothing written,
        when `worker_id` no longer holds the lease."""
        ...

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
        """Newest first (by creation, then id), optionally filtered (`within`: raised in that
        window; `job_ids`: of those jobs only); with `after`, those that follow it
        (`domain.paging.follows`)."""
        ...

    async def get_notification(self, notification_id: str) -> Notification:
        """The notification of that id (whole: no prefix stands for one), its target's secrets
        left sealed; raises `NotificationNotFound`."""
        ...

    async def prune(self, before: datetime, limit: int) -> int:
        """Delete up to `limit` delivered or given-up notifications raised before `before`
        (`domain.runs.retention.notification_expired`: never one still to deliver), oldest first,
        in one transaction; returns how many."""
        ...

    async def add(self, raised: Sequence[Notification]) -> None:
        """Add `raised` to the outbox (`notify test`), held as every write holds them
        (`domain.alerts.alert_holding`)."""
        ...

    async def redeliver(self, notification_id: str, now: datetime) -> Notification:
        """The notification made pending again from `now` (`domain.alerts.alerts.redelivered`),
        written and returned; raises `NotificationNotFound`."""
        ...

    async def watched_due(self, now: datetime, limit: int) -> list[Endpoint]:
        """Up to `limit` endpoints watched for missed runs (`missed_after` set) that are due by
        `now`, earliest `next_run_at` first (`domain.runs.watch.missed_slot` then tells which have
        missed their slot). Header secrets may be left sealed: only the schedule and the
        alerts are read."""
        ...

    async def open_episodes(self, kind: AlertEvent) -> list[WatchEpisode]:
        """The episodes of `kind` not recovered yet, oldest first."""
        ...

    async def open_episode(self, episode: WatchEpisode, raised: Sequence[Notification]) -> bool:
        """Record `episode` and add `raised` to the outbox, in one transaction; False, and
        nothing written, when an episode of its subject, kind and start is recorded already,
        or one of its subject and kind is still open (another worker noticed it first)."""
        ...

    async def close_episode(
        self, episode_id: str, now: datetime, raised: Sequence[Notification]
    ) -> bool:
        """Mark the open episode recovered at `now` and add `raised` to the outbox, in one
        transaction; False, and nothing written, when it is recovered already (or gone)."""
        ...

    async def prune_episodes(self, before: datetime, limit: int) -> int:
        """Delete up to `limit` recovered episodes opened before `before` (never an open one),
        oldest first, in one transaction; returns how many."""
        ...
