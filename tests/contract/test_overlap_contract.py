"""Calls that outlast their interval (issue 32: 9 s every 5 s lost every other slot silently):
each slot that came while the call ran is recorded as a skipped run, raises `overrunning` once
per streak, and the overlap policy says whether the latest of them runs; on every store."""

from __future__ import annotations

from cronpilot.domain.alerts.alerts import AlertEvent
from cronpilot.domain.model import Overlap, RunStatus
from cronpilot.domain.ports import Store
from cronpilot.usecases.declarations import apply_to_catalog
from tests.contract.builders import OK, T0, claim_one, declaration, seconds, spec
from tests.support.finishing import finish_one

HOOK = "https://hooks.example.com/ops"
SKIPPED = "skipped: the previous call was still running"


async def _declare(store: Store, overlap: Overlap) -> str:
    declared = spec("slow", every=5, notify=(HOOK,), overlap=overlap)
    await apply_to_catalog(store.catalog, [declaration("j", declared)], T0)
    return (await store.catalog.get_endpoint("j/slow")).id


async def _call(store: Store, start: float, end: float) -> None:
    """Claim at T0+start the due slot and finish its call at T0+end."""
    claim = await claim_one(store, T0 + seconds(start))
    await finish_one(store.claims, claim, "w1", OK, T0 + seconds(end))


async def _runs(store: Store, endpoint_id: str) -> list[tuple[float, RunStatus, str | None]]:
    found = await store.runs.list_runs(endpoint_id)
    return sorted(((r.slot_at - T0).total_seconds(), r.status, r.error_message) for r in found)


async def test_skip_records_each_slot_a_long_call_overran_and_alerts_once(store: Store) -> None:
    endpoint_id = await _declare(store, Overlap.SKIP)

    await _call(store, 0, 9)  # the slot of T0+5 came while it ran
    after_first = await store.catalog.get_endpoint(endpoint_id)
    await _call(store, 10, 19)  # T0+15 likewise
    await _call(store, 20, 21)  # in time

    assert after_first.next_slot == T0 + seconds(10)
    assert await _runs(store, endpoint_id) == [
        (0, RunStatus.SUCCESS, None),
        (5, RunStatus.SKIPPED, SKIPPED),
        (10, RunStatus.SUCCESS, None),
        (15, RunStatus.SKIPPED, SKIPPED),
        (20, RunStatus.SUCCESS, None),
    ]
    told = sorted(
        (n.event, n.payload["episode"]["started_at"])  # type: ignore[index]
        for n in await store.notifications.list_notifications()
    )
    assert told == [
        (AlertEvent.OVERRUNNING, (T0 + seconds(5)).isoformat()),
        (AlertEvent.RECOVERED, (T0 + seconds(5)).isoformat()),
    ]
    assert (await store.catalog.get_endpoint(endpoint_id)).overrun_since is None


async def test_queue_one_runs_the_latest_overrun_slot_at_once(store: Store) -> None:
    endpoint_id = await _declare(store, Overlap.QUEUE_ONE)

    await _call(store, 0, 9)  # T0+5 waits for it, and runs at once
    queued = await store.catalog.get_endpoint(endpoint_id)
    await _call(store, 9, 17)  # T0+10 and T0+15 came: T0+15 runs, T0+10 is skipped

    assert (queued.next_run_at, queued.next_slot) == (T0 + seconds(9), T0 + seconds(5))
    assert [(slot, status) for slot, status, _ in await _runs(store, endpoint_id)] == [
        (0, RunStatus.SUCCESS),
        (5, RunStatus.SUCCESS),
        (10, RunStatus.SKIPPED),
    ]
    assert (await store.catalog.get_endpoint(endpoint_id)).next_slot == T0 + seconds(15)


async def test_a_call_within_its_interval_skips_nothing(store: Store) -> None:
    endpoint_id = await _declare(store, Overlap.SKIP)

    await _call(store, 0, 4)
    await _call(store, 5, 5.5)  # a busy worker's slot within its grace still runs

    assert [status for _, status, _ in await _runs(store, endpoint_id)] == [RunStatus.SUCCESS] * 2
    assert await store.notifications.list_notifications() == []
