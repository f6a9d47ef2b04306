"""Alerts that know the DAG (issue 34): a dependant's `missed`, `late` and `failing` written
while an upstream fails or is paused are held, "blocked by" it, and its `recovered` releases
them; on every store, whichever path writes the alert."""

from __future__ import annotations

from datetime import datetime

from cronpilot.domain.alerts.alerts import AlertEvent, NotificationStatus
from cronpilot.domain.model import Pause, Response, Schedule
from cronpilot.domain.ports import Store
from cronpilot.domain.runs.watch import WatchEpisode, opened_notifications
from cronpilot.usecases.declarations import apply_to_catalog
from tests.contract.builders import OK, T0, claim_one, declaration, seconds, spec
from tests.support.finishing import finish_one
from tests.support.scheduling import set_pause

HOOK = "https://hooks.example.com/ops"
FAILED = Response(status_code=503, error_message="HTTP 503 Service Unavailable")


async def _declare(store: Store) -> None:
    fetch = spec("fetch", notify=(HOOK,), notify_after=1, dependants=("load",))
    load = spec("load", notify=(HOOK,), depends_on=("fetch",), schedule=Schedule())
    await apply_to_catalog(store.catalog, [declaration("etl", fetch, load)], T0)


async def _load_misses(store: Store, slot: datetime) -> None:
    """A `missed` of etl/load written as a watch writes one."""
    load = await store.catalog.get_endpoint("etl/load")
    episode = WatchEpisode(f"ep-{slot.timestamp()}", load.id, AlertEvent.MISSED, slot, slot)
    assert await store.notifications.open_episode(
        episode, opened_notifications(episode, load, slot)
    )


async def test_a_failing_upstream_holds_its_dependants_alerts_until_it_recovers(
    store: Store,
) -> None:
    await _declare(store)
    fetch = await store.catalog.get_endpoint("etl/fetch")
    await finish_one(store.claims, await claim_one(store, T0), "w1", FAILED, T0)

    await _load_misses(store, T0 + seconds(10))
    [episode] = await store.notifications.open_episodes(AlertEvent.MISSED)
    assert await store.notifications.close_episode(episode.id, T0 + seconds(20), [])
    # fetch runs again, and recovers: load's next alert pages.
    later = T0 + seconds(3600)
    await finish_one(store.claims, await claim_one(store, later), "w1", OK, later)
    await _load_misses(store, later + seconds(10))

    found = await store.notifications.list_notifications()
    load = [n for n in found if n.endpoint_id != fetch.id]
    assert [(n.event, n.status, n.held_by) for n in sorted(load, key=lambda n: n.created_at)] == [
        (AlertEvent.MISSED, NotificationStatus.HELD, "etl/fetch"),
        (AlertEvent.MISSED, NotificationStatus.PENDING, None),
    ]
    assert sorted(n.event for n in found if n.endpoint_id == fetch.id) == [
        AlertEvent.FAILING,
        AlertEvent.RECOVERED,
    ]
    # A held alert is never handed to a notifier.
    claimed = await store.notifications.claim_due(later + seconds(60), "n1", 60, 10)
    assert all(n.status is NotificationStatus.PENDING for n in claimed)
    assert NotificationStatus.HELD not in {n.status for n in claimed}
    assert len([n for n in claimed if n.endpoint_id != fetch.id]) == 1


async def test_a_paused_upstream_holds_its_dependants_alerts(store: Store) -> None:
    await _declare(store)
    fetch = await store.catalog.get_endpoint("etl/fetch")
    await set_pause(store.catalog, fetch.id, Pause("upkeep"), T0)

    await _load_misses(store, T0 + seconds(10))

    [held] = await store.notifications.list_notifications(status=NotificationStatus.HELD)
    assert (held.event, held.held_by) == (AlertEvent.MISSED, "etl/fetch")
