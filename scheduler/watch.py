"""The watch every scheduler worker keeps on the shared store (`domain.runs.watch`): endpoints that
missed a slot, and, once at start, a gap in the workers' heartbeats.

Both are idempotent across workers: the store records each episode once (its unique keys), and
only the worker whose write took raises the episode's alerts, in the same transaction. A pass
costs one indexed read of the watched endpoints that are due, and one of the open episodes.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from datetime import UTC, datetime

from cronpilot.domain.alerts.alerts import AlertEvent
from cronpilot.domain.errors import CronpilotError, EndpointNotFound
from cronpilot.domain.log_extra import log_extra
from cronpilot.domain.model import Endpoint
from cronpilot.domain.ports.bundles import WatchRepositories
from cronpilot.domain.ports.clock import Clock
from cronpilot.domain.runs.outage import described
from cronpilot.domain.runs.watch import (
    WATCH_BATCH,
    gap_episode,
    gap_notifications,
    missed_episode,
    missed_is_over,
    opened_notifications,
    recovered_notifications,
    workers_gap,
)
from cronpilot.domain.schedule.limits import LimitState, held_by_limit
from cronpilot.runtime.timing import Periodic

log = logging.getLogger(__name__)

_EVER = datetime(1970, 1, 1, tzinfo=UTC)
"""Every registered worker has been seen since."""


class Watch:
    def __init__(
        self, store: WatchRepositories, clock: Clock, seconds: float, *, worker_stale_seconds: float
    ) -> None:
        self._store = store
        self._clock = clock
        self._worker_stale_seconds = worker_stale_seconds
        self._timer = Periodic("watch", clock, seconds, self._check, first_after=seconds)

    async def first_look(self) -> None:
        """What a worker does before its first claim: record the gap in the heartbeats that
        ended with it, if any, and look for missed slots before it runs them. A store that
        cannot be reached is one warning: the timer looks again."""
        try:
            await self.gap_once()
            await self.check_once()
        except CronpilotError as error:
            log.warning(
                "watch failed at start (%s); trying again at its next turn",
                described(error),
                extra=log_extra("periodic_failed", job="watch"),
            )

    async def gap_once(self) -> bool:
        """Record a `no_workers` episode, start and end, when no worker has beaten for
        `worker_stale_seconds` (call before this worker's first heartbeat). True if this call
        recorded it."""
        now = self._clock.now()
        registered = await self._store.workers.list_active(_EVER, now)
        heard = (activity.worker.last_seen for activity in registered)
        silent_since = workers_gap(heard, self._worker_stale_seconds, now)
        if silent_since is None:
            return False
        episode = gap_episode(silent_since, now)
        watched = await self._store.catalog.list_endpoints()
        recorded = await self._store.notifications.open_episode(
            episode, gap_notifications(episode, watched, now)
        )
        if recorded:
            log.warning(
                "no scheduler worker was alive from %s to %s",
                silent_since.isoformat(),
                now.isoformat(),
                extra=log_extra("no_workers", since=silent_since.isoformat()),
            )
        return recorded

    async def check_once(self) -> tuple[int, int]:
        """Open a `missed` episode for each watched endpoint that missed its slot, and end
        those whose slot is no longer missed; returns how many this call opened and ended."""
        now = self._clock.now()
        repository = self._store.notifications
        open_ = {e.subject: e for e in await repository.open_episodes(AlertEvent.MISSED)}
        due = {e.id: e for e in await repository.watched_due(now, WATCH_BATCH)}
        holding = await self._holding_limits(due.values())
        opened = ended = 0
        for endpoint in due.values():
            if endpoint.id in open_ or held_by_limit(endpoint, holding):
                continue
            episode = missed_episode(endpoint, now)
            if episode is None:
                continue
            if await repository.open_episode(episode, opened_notifications(episode, endpoint, now)):
                opened += 1
                log.warning(
                    "%s missed its slot of %s",
                    endpoint.ref,
                    episode.started_at.isoformat(),
                    extra=log_extra("missed", endpoint=endpoint.ref),
                )
        for episode in open_.values():
            current = due.get(episode.subject) or await self._endpoint(episode.subject)
            if not missed_is_over(episode, current, now):
                continue
            raised = [] if current is None else recovered_notifications(episode, current, now)
            if await repository.close_episode(episode.id, now, raised):
                ended += 1
                log.info(
                    "%s runs again after missing its slot of %s",
                    episode.subject if current is None else current.ref,
                    episode.started_at.isoformat(),
                    extra=log_extra("missed_recovered", endpoint=episode.subject),
                )
        return opened, ended

    async def _holding_limits(self, due: Iterable[Endpoint]) -> dict[str, LimitState]:
        """The limits of the due endpoints that name one, by key (none read otherwise): a slot
        its limit holds back waits for room, it is not missed."""
        if all(endpoint.spec.limit is None for endpoint in due):
            return {}
        return {status.state.key: status.state for status in await self._store.catalog.limits()}

    async def _endpoint(self, endpoint_id: str) -> Endpoint | None:
        try:
            return await self._store.catalog.get_endpoint(endpoint_id)
        except EndpointNotFound:
            return None

    async def run(self, stop: asyncio.Event) -> None:
        """Look until `stop` is set; the first turn comes after the interval (`first_look` is
        the worker's first)."""
        await self._timer.run(stop)

    async def _check(self) -> bool:
        opened, _ = await self.check_once()
        return opened >= WATCH_BATCH
