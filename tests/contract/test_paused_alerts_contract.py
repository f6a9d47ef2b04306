"""A paused job or endpoint pages nobody (issue 32): no `missed` while the pause holds, neither
`late` nor `missed` when it ends, its next slot counted from the resume; on every store."""

from __future__ import annotations

from datetime import datetime

from cronpilot.adapters.manual_clock import ManualClock
from cronpilot.domain.alerts.alerts import AlertEvent
from cronpilot.domain.model import Pause
from cronpilot.domain.ports import Store
from cronpilot.scheduler.watch import Watch
from cronpilot.usecases.declarations import apply_to_catalog
from tests.contract.builders import OK, T0, claim_one, declaration, seconds, spec
from tests.support.finishing import finish_one
from tests.support.scheduling import set_pause

HOOK = "https://hooks.example.com/ops"


async def _watched(store: Store) -> str:
    """`j/e` every minute from T0, missed after 10 s, late after 5 s; its slot of T0 run in
    time. Returns its id."""
    declared = spec("e", notify=(HOOK,), missed_after_seconds=10, late_after_seconds=5)
    await apply_to_catalog(store.catalog, [declaration("j", declared)], T0)
    await finish_one(store.claims, await claim_one(store, T0), "w1", OK, T0)
    return (await store.catalog.get_endpoint("j/e")).id


async def _watch(store: Store, now: datetime) -> tuple[int, int]:
    return await Watch(store, ManualClock(now), 10, worker_stale_seconds=60).check_once()


async def _run_at(store: Store, now: datetime) -> datetime:
    """Claim and finish the endpoint at `now`; the slot it ran."""
    claim = await claim_one(store, now)
    await finish_one(store.claims, claim, "w1", OK, now)
    return claim.slot_at


async def test_a_job_paused_for_a_while_is_neither_missed_nor_late(store: Store) -> None:
    await _watched(store)
    await store.catalog.set_job_pause("j", Pause("upkeep", until=T0 + seconds(200)), T0)

    assert await _watch(store, T0 + seconds(150)) == (0, 0)
    # The pause ended at T0+200: the slot runs at once, counted from then, not from T0+180.
    slot = await _run_at(store, T0 + seconds(203))

    assert slot >= T0 + seconds(200)
    assert await _watch(store, T0 + seconds(204)) == (0, 0)
    assert await store.notifications.list_notifications() == []


async def test_a_job_resumed_by_hand_counts_its_next_slot_from_the_resume(store: Store) -> None:
    endpoint_id = await _watched(store)
    await store.catalog.set_job_pause("j", Pause("upkeep"), T0 + seconds(10))
    assert await _watch(store, T0 + seconds(150)) == (0, 0)

    await store.catalog.set_job_pause("j", None, T0 + seconds(170))
    resumed = await store.catalog.get_endpoint(endpoint_id)
    slot = await _run_at(store, T0 + seconds(172))

    assert resumed.next_slot == T0 + seconds(170)
    assert slot == T0 + seconds(170)
    assert await _watch(store, T0 + seconds(175)) == (0, 0)
    assert await store.notifications.list_notifications() == []


async def test_a_slot_missed_after_a_job_resumed_counts_from_the_resume(store: Store) -> None:
    await _watched(store)
    await store.catalog.set_job_pause("j", Pause("upkeep", until=T0 + seconds(200)), T0)

    # No worker ran it after the pause ended: missed, since the pause's end.
    assert await _watch(store, T0 + seconds(215)) == (1, 0)

    [episode] = await store.notifications.open_episodes(AlertEvent.MISSED)
    assert episode.started_at == T0 + seconds(200)


async def test_an_endpoint_resumed_by_hand_is_not_late_for_the_slots_it_skipped(
    store: Store,
) -> None:
    endpoint_id = await _watched(store)
    await set_pause(store.catalog, endpoint_id, Pause("mine"), T0 + seconds(10))
    assert await _watch(store, T0 + seconds(90)) == (0, 0)

    await set_pause(store.catalog, endpoint_id, None, T0 + seconds(95))
    slot = await _run_at(store, T0 + seconds(96))

    assert slot == T0 + seconds(95)
    assert await store.notifications.list_notifications() == []
