"""Missed and late runs on every store (memory, SQLite, PostgreSQL): `late_since` kept by the
finish with its alerts, the watched endpoints that are due, and episodes recorded once however
many workers notice them at once (`domain.runs.watch`, `scheduler.watch`)."""

from __future__ import annotations

import asyncio
from typing import Any

from cronpilot.adapters.manual_clock import ManualClock
from cronpilot.domain.alerts.alerts import AlertEvent, Notification
from cronpilot.domain.ports import Store
from cronpilot.domain.runs.watch import (
    WatchEpisode,
    opened_notifications,
    recovered_notifications,
)
from cronpilot.domain.runs.workers import WorkerInfo
from cronpilot.scheduler.watch import Watch
from cronpilot.usecases.declarations import apply_to_catalog
from tests.contract.builders import OK, T0, claim_one, declaration, seconds, spec
from tests.support.finishing import finish_one

HOOK = "https://hooks.example.com/ops"
E = AlertEvent


async def _declare(store: Store, name: str = "e", **alerts: Any) -> str:
    """One endpoint due every minute from T0, alerting HOOK; returns its id."""
    await apply_to_catalog(
        store.catalog, [declaration("j", spec(name, notify=(HOOK,), **alerts))], T0
    )
    return (await store.catalog.get_endpoint(f"j/{name}")).id


def _events(found: list[Notification]) -> list[tuple[AlertEvent, str]]:
    told = []
    for n in found:
        episode = n.payload["episode"]
        assert isinstance(episode, dict)
        told.append((n.event, str(episode["kind"])))
    return sorted(told)


async def test_late_runs_are_kept_by_the_finish_with_their_alerts(store: Store) -> None:
    endpoint_id = await _declare(store, late_after_seconds=30)

    # The slot of T0 starts 45 s late, that of T0+60 too, that of T0+120 in time.
    for slot, delay in ((T0, 45), (T0 + seconds(60), 45), (T0 + seconds(120), 1)):
        claim = await claim_one(store, slot + seconds(delay))
        assert claim.slot_at == slot
        await finish_one(store.claims, claim, "w1", OK, slot + seconds(delay))
        if slot == T0:
            late = await store.catalog.get_endpoint(endpoint_id)
            assert late.late_since == T0

    assert (await store.catalog.get_endpoint(endpoint_id)).late_since is None
    found = await store.notifications.list_notifications()
    assert _events(found) == [(E.LATE, "late"), (E.RECOVERED, "late")]


async def test_watched_due_lists_the_due_endpoints_watched_for_missed_runs(store: Store) -> None:
    await apply_to_catalog(
        store.catalog, [declaration("now", spec("e", missed_after_seconds=60))], T0
    )
    later = T0 + seconds(100)
    await apply_to_catalog(
        store.catalog, [declaration("later", spec("e", missed_after_seconds=60))], later
    )
    await apply_to_catalog(store.catalog, [declaration("never", spec("e"))], T0)

    soon = await store.notifications.watched_due(T0 + seconds(10), 10)
    both = await store.notifications.watched_due(later, 10)

    assert [e.ref for e in soon] == ["now/e"]
    assert [e.ref for e in both] == ["now/e", "later/e"]
    assert [e.ref for e in await store.notifications.watched_due(later, 1)] == ["now/e"]


async def test_an_episode_is_opened_once_and_closed_once(store: Store) -> None:
    endpoint_id = await _declare(store, missed_after_seconds=60)
    endpoint = await store.catalog.get_endpoint(endpoint_id)
    first = WatchEpisode("ep1", endpoint_id, E.MISSED, T0, T0 + seconds(60))
    same = WatchEpisode("ep2", endpoint_id, E.MISSED, T0, T0 + seconds(61))
    later = WatchEpisode("ep3", endpoint_id, E.MISSED, T0 + seconds(60), T0 + seconds(120))

    def told(episode: WatchEpisode) -> list[Notification]:
        return opened_notifications(episode, endpoint, episode.opened_at)

    assert await store.notifications.open_episode(first, told(first))
    assert not await store.notifications.open_episode(same, told(same))
    # Another start while one is open: the open one stands.
    assert not await store.notifications.open_episode(later, told(later))
    assert [e.id for e in await store.notifications.open_episodes(E.MISSED)] == ["ep1"]
    assert await store.notifications.open_episodes(E.NO_WORKERS) == []

    now = T0 + seconds(200)
    assert await store.notifications.close_episode(
        "ep1", now, recovered_notifications(first, endpoint, now)
    )
    assert not await store.notifications.close_episode(
        "ep1", now, recovered_notifications(first, endpoint, now)
    )
    assert await store.notifications.open_episodes(E.MISSED) == []
    # Over, its start is taken still; a new start opens a new episode.
    assert not await store.notifications.open_episode(same, told(same))
    assert await store.notifications.open_episode(later, told(later))

    found = await store.notifications.list_notifications()
    assert _events(found) == [(E.MISSED, "missed"), (E.MISSED, "missed"), (E.RECOVERED, "missed")]


async def test_workers_watching_at_once_raise_one_missed_and_one_recovered(store: Store) -> None:
    endpoint_id = await _declare(store, missed_after_seconds=600)
    clock = ManualClock(T0 + seconds(3600))
    watches = [Watch(store, clock, 10, worker_stale_seconds=60) for _ in range(3)]

    opened = await asyncio.gather(*(w.check_once() for w in watches))
    again = await asyncio.gather(*(w.check_once() for w in watches))

    assert sorted(opened) == [(0, 0), (0, 0), (1, 0)]
    assert again == [(0, 0)] * 3
    [episode] = await store.notifications.open_episodes(E.MISSED)
    assert (episode.subject, episode.started_at) == (endpoint_id, T0)

    # A worker runs the endpoint: the slot is no longer missed.
    claim = await claim_one(store, clock.now())
    await finish_one(store.claims, claim, "w1", OK, clock.now())
    closed = await asyncio.gather(*(w.check_once() for w in watches))

    assert sorted(closed) == [(0, 0), (0, 0), (0, 1)]
    events = sorted(n.event for n in await store.notifications.list_notifications())
    assert events == [E.MISSED, E.RECOVERED]


async def test_workers_starting_after_a_gap_record_it_once(store: Store) -> None:
    await _declare(store, missed_after_seconds=600)
    gone = WorkerInfo("old", "host", 1, "0", T0, T0)
    await store.workers.beat(gone)
    clock = ManualClock(T0 + seconds(7200))
    watches = [Watch(store, clock, 10, worker_stale_seconds=60) for _ in range(3)]

    recorded = await asyncio.gather(*(w.gap_once() for w in watches))

    assert sorted(recorded) == [False, False, True]
    found = await store.notifications.list_notifications()
    assert _events(found) == [(E.NO_WORKERS, "no_workers"), (E.RECOVERED, "no_workers")]
    assert await store.notifications.open_episodes(E.NO_WORKERS) == []
    # A worker that has beaten since: no gap.
    await store.workers.beat(gone.seen(clock.now()))
    assert not await watches[0].gap_once()


async def test_a_slot_caught_up_at_the_claim_is_told_missed_even_unwatched(store: Store) -> None:
    """No watch looked (the store was out, another worker claimed first): the claim that moves
    the missed slot tells it, once, and a watch after it finds nothing more to say."""
    await _declare(store, missed_after_seconds=600)
    later = T0 + seconds(3600)

    claim = await claim_one(store, later)
    await finish_one(store.claims, claim, "w1", OK, later)
    watch = Watch(store, ManualClock(later + seconds(1)), 10, worker_stale_seconds=60)

    assert claim.slot_at == later  # caught up: the latest slot runs instead
    assert await watch.check_once() == (0, 0)
    found = await store.notifications.list_notifications()
    assert _events(found) == [(E.MISSED, "missed"), (E.RECOVERED, "missed")]
    assert {n.payload["episode"]["started_at"] for n in found} == {T0.isoformat()}
    assert await store.notifications.open_episodes(E.MISSED) == []


async def test_a_slot_the_watch_saw_missed_is_not_told_again_by_the_claim(store: Store) -> None:
    await _declare(store, missed_after_seconds=600)
    later = T0 + seconds(3600)
    watch = Watch(store, ManualClock(later), 10, worker_stale_seconds=60)
    assert await watch.check_once() == (1, 0)

    await finish_one(store.claims, await claim_one(store, later), "w1", OK, later)

    assert await watch.check_once() == (0, 1)
    found = await store.notifications.list_notifications()
    assert _events(found) == [(E.MISSED, "missed"), (E.RECOVERED, "missed")]


async def test_a_slot_caught_up_sooner_than_missed_after_is_not_missed(store: Store) -> None:
    await _declare(store, missed_after_seconds=600)

    await finish_one(store.claims, await claim_one(store, T0 + seconds(300)), "w1", OK, T0)

    assert await store.notifications.list_notifications() == []


async def test_ended_episodes_go_with_the_notifications_retention_open_ones_stay(
    store: Store,
) -> None:
    endpoint_id = await _declare(store, missed_after_seconds=60)
    old = WatchEpisode("old", endpoint_id, E.MISSED, T0, T0)
    still = WatchEpisode("still", endpoint_id, E.MISSED, T0 + seconds(60), T0 + seconds(60))
    assert await store.notifications.open_episode(old, [])
    assert await store.notifications.close_episode("old", T0 + seconds(30), [])
    assert await store.notifications.open_episode(still, [])

    assert await store.notifications.prune_episodes(T0 + seconds(86400), 10) == 1
    assert await store.notifications.prune_episodes(T0 + seconds(86400), 10) == 0
    assert [e.id for e in await store.notifications.open_episodes(E.MISSED)] == ["still"]
