"""Runs that stop happening or start late: `missed`, `late` and `no_workers`, each
once per episode and ended by a `recovered`.

- `late` is decided where a run is recorded: `late_since` is part of the endpoint's state,
  written by the finish that records the run (no statement more), and `domain.alerts.alerts`
  raises `late` when it begins and `recovered` when a run in time ends it. A finish is fenced
  on its lease, so one worker alone records each change.
- `missed` is noticed by any live worker's watch (`scheduler.watch`), on a timer: a watched
  endpoint whose due slot has no run in flight `missed_after` after it (`missed_slot`), whatever
  the cause (no worker could claim it, the store was out, a pause outlived its end). The store
  opens one episode per endpoint and missed slot (a unique key), so workers watching at once
  raise it once; the episode ends, with `recovered`, once the slot is no longer missed. A claim
  whose catch-up rule moves a slot missed that long records it too, over at once, under the
  same key (`caught_up_missed`): told whether the watch or the claim comes first.
- `no_workers` can only be noticed by something alive: a scheduler worker starting after a gap
  in the heartbeats (`workers_gap`) records the whole episode, its start and its end, keyed on
  the last heartbeat heard, so that workers starting together record it once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from cronpilot.domain.alerts.alerts import (
    AlertEvent,
    Episode,
    Notification,
    episode_notifications,
)
from cronpilot.domain.model import Endpoint, Run, ScheduleSource, new_id
from cronpilot.domain.schedule.pauses import counted_from, job_holds

WORKERS = "workers"
"""The subject of `no_workers` episodes, which are no endpoint's."""

WATCH_BATCH = 500
"""The most overdue endpoints one watch pass looks at; the rest wait for the next pass."""


@dataclass(frozen=True, slots=True)
class WatchEpisode:
    """An episode as the store keeps it: one per subject (an endpoint's id, or `WORKERS`), kind
    and start, and at most one open per subject and kind."""

    id: str
    subject: str
    kind: AlertEvent
    started_at: datetime
    opened_at: datetime
    recovered_at: datetime | None = None

    @property
    def endpoint_id(self) -> str | None:
        return None if self.subject == WORKERS else self.subject

    @property
    def told(self) -> Episode:
        """What its events say of it."""
        return Episode(self.kind, self.started_at, self.recovered_at)


def late_since(endpoint: Endpoint, run: Run) -> datetime | None:
    """The endpoint's `late_since` once `run` (of its schedule) has started: the slot of the
    first run of the streak of late runs it continues or begins, None when it started in
    time (or the endpoint watches no lateness)."""
    limit = endpoint.spec.late_after_seconds
    due = counted_from(endpoint, run.slot_at, run.started_at)
    if limit is None or run.started_at - due <= timedelta(seconds=limit):
        return None
    return endpoint.late_since or run.slot_at


def with_lateness(endpoint: Endpoint, run: Run) -> Endpoint:
    """`endpoint` with its `late_since` moved on by `run` (unchanged, not copied, mostly)."""
    since = late_since(endpoint, run)
    return endpoint if since == endpoint.late_since else replace(endpoint, late_since=since)


def missed_slot(endpoint: Endpoint, now: datetime) -> datetime | None:
    """The slot the endpoint has missed at `now`: its due slot, when no run of it is in flight
    (no live lease) `missed_after` after it; None when it is watched for none, not due (a
    pause in force, its own or its job's, a future slot), or not that late yet. A slot that
    fell while its job was paused counts from the pause's end (`pauses.counted_from`), and is
    told as missed since then."""
    limit = endpoint.spec.missed_after_seconds
    due = endpoint.next_run_at
    if limit is None or due is None or due > now or job_holds(endpoint, now):
        return None
    if endpoint.next_run_source is ScheduleSource.QUIET:
        # A quiet window's skipped slot: nothing was to be called.
        return None
    if endpoint.lease_until is not None and endpoint.lease_until >= now:
        return None
    slot = counted_from(endpoint, endpoint.next_slot or due, now)
    return slot if slot + timedelta(seconds=limit) <= now else None


def missed_episode(endpoint: Endpoint, now: datetime) -> WatchEpisode | None:
    """The `missed` episode to open for `endpoint` at `now`, if it has missed a slot."""
    slot = missed_slot(endpoint, now)
    if slot is None:
        return None
    return WatchEpisode(new_id(), endpoint.id, AlertEvent.MISSED, slot, now)


def caught_up_missed(endpoint: Endpoint, now: datetime) -> WatchEpisode | None:
    """The `missed` episode, over already, of an endpoint whose missed baseline slot its
    catch-up rule moves at the claim (`transitions.caught_up`: a run takes over, or the
    schedule waits for the next slot), when that slot was missed for `missed_after`: so that
    the miss is told even when no watch looked before the claim (a store outage, a worker
    claiming first). Keyed as the watch's, so a miss the watch opened is not told twice."""
    limit = endpoint.spec.missed_after_seconds
    planned = endpoint.next_slot
    if limit is None or planned is None:
        return None
    slot = counted_from(endpoint, planned, now)
    if slot + timedelta(seconds=limit) > now:
        return None
    return WatchEpisode(new_id(), endpoint.id, AlertEvent.MISSED, slot, now, now)


def caught_up_notifications(
    episode: WatchEpisode, endpoint: Endpoint, now: datetime
) -> list[Notification]:
    """`missed` and its `recovered` for an episode over already (`caught_up_missed`)."""
    started = replace(episode, recovered_at=None)
    return opened_notifications(started, endpoint, now) + recovered_notifications(
        started, endpoint, now
    )


def missed_is_over(episode: WatchEpisode, endpoint: Endpoint | None, now: datetime) -> bool:
    """Whether an open `missed` episode has ended: its slot is no longer the one missed (a run
    took it, or the schedule moved past it), or the endpoint is gone."""
    return endpoint is None or missed_slot(endpoint, now) != episode.started_at


def opened_notifications(
    episode: WatchEpisode, endpoint: Endpoint, now: datetime
) -> list[Notification]:
    return episode_notifications(episode.kind, endpoint, episode.told, now)


def recovered_notifications(
    episode: WatchEpisode, endpoint: Endpoint, now: datetime
) -> list[Notification]:
    told = replace(episode.told, recovered_at=now)
    return episode_notifications(AlertEvent.RECOVERED, endpoint, told, now)


def workers_gap(
    last_seen: Iterable[datetime], stale_seconds: float, now: datetime
) -> datetime | None:
    """The last heartbeat heard when none has been heard for `stale_seconds` (no worker was
    alive since, or a while after, it); None when one is recent, or no worker ever beat."""
    newest = max(last_seen, default=None)
    if newest is None or newest >= now - timedelta(seconds=stale_seconds):
        return None
    return newest


def gap_episode(silent_since: datetime, now: datetime) -> WatchEpisode:
    """The whole `no_workers` episode a worker starting at `now` records: over already."""
    return WatchEpisode(new_id(), WORKERS, AlertEvent.NO_WORKERS, silent_since, now, now)


def gap_notifications(
    episode: WatchEpisode, watched: Sequence[Endpoint], now: datetime
) -> list[Notification]:
    """`no_workers` and its `recovered` for each webhook URL of the endpoints watched for
    missed runs, once per URL (carried by the first endpoint, by reference, that lists it)."""
    raised: list[Notification] = []
    seen: set[str] = set()
    for endpoint in sorted(watched, key=lambda e: e.ref):
        if endpoint.spec.missed_after_seconds is None:
            continue
        fresh = [url for url in endpoint.spec.notify if url not in seen]
        if not fresh:
            continue
        seen.update(fresh)
        carrier = replace(endpoint, spec=replace(endpoint.spec, notify=tuple(fresh)))
        started = replace(episode.told, recovered_at=None)
        raised += episode_notifications(AlertEvent.NO_WORKERS, carrier, started, now)
        raised += episode_notifications(AlertEvent.RECOVERED, carrier, episode.told, now)
    return raised
