"""`overlap: allow`: a call that outlasts its interval (9 s every 5 s) does not hold the next
slot back. Each slot is claimed when due and called while the previous call still runs, each
run holding a lease of its own; finishes of overlapping runs add up on the endpoint, the
reaper ends a dead worker's run alone, and a limit still bounds the calls in flight; on every
store."""

from __future__ import annotations

import pytest

from cronpilot.domain.errors import LeaseLost
from cronpilot.domain.model import Claim, ErrorKind, Overlap, Response, RunStatus, RunTrigger
from cronpilot.domain.ports import JobDeclaration, Store
from cronpilot.domain.runs.transitions import queued_run
from cronpilot.domain.schedule.limits import Limit
from cronpilot.usecases.declarations import apply_to_catalog
from tests.contract.builders import LEASE_SECONDS, OK, T0, declaration, seconds, spec
from tests.support.finishing import finish_one

FAILED = Response(status_code=500, body=None)


async def _declare(
    store: Store, overlap: Overlap = Overlap.ALLOW, limit: Limit | None = None
) -> str:
    declared = spec("slow", every=5, overlap=overlap, limit=None if limit is None else limit.key)
    job = declaration("j", declared)
    limits = () if limit is None else (limit,)
    await apply_to_catalog(store.catalog, [JobDeclaration(job.job, job.endpoints, limits)], T0)
    return (await store.catalog.get_endpoint("j/slow")).id


async def _claims(store: Store, at: float, worker: str = "w1") -> list[Claim]:
    return await store.claims.claim_due(T0 + seconds(at), worker, LEASE_SECONDS, 10)


async def _running(store: Store, endpoint_id: str) -> list[float]:
    found = await store.runs.list_runs(endpoint_id)
    return sorted(
        (run.slot_at - T0).total_seconds() for run in found if run.status is RunStatus.RUNNING
    )


async def _statuses(store: Store, endpoint_id: str) -> list[tuple[float, RunStatus]]:
    found = await store.runs.list_runs(endpoint_id)
    return sorted(((run.slot_at - T0).total_seconds(), run.status) for run in found)


async def _finish(store: Store, claim: Claim, at: float, response: Response = OK) -> None:
    await finish_one(store.claims, claim, "w1", response, T0 + seconds(at))


async def test_every_slot_is_called_while_the_previous_call_still_runs(store: Store) -> None:
    endpoint_id = await _declare(store)

    [first] = await _claims(store, 0)
    [second] = await _claims(store, 5)  # the call of T0 runs until T0+9
    in_flight = await _running(store, endpoint_id)
    between = await store.catalog.get_endpoint(endpoint_id)
    await _finish(store, first, 9)
    [third] = await _claims(store, 10)
    await _finish(store, second, 14)
    [fourth] = await _claims(store, 15)
    await _finish(store, third, 19)
    await _finish(store, fourth, 24)

    assert in_flight == [0, 5]
    assert (between.lease_owner, between.next_slot) == (None, T0 + seconds(10))
    assert [c.slot_at for c in (first, second, third, fourth)] == [
        T0 + seconds(n) for n in (0, 5, 10, 15)
    ]
    assert await _statuses(store, endpoint_id) == [(n, RunStatus.SUCCESS) for n in (0, 5, 10, 15)]
    assert await store.notifications.list_notifications() == []
    ended = await store.catalog.get_endpoint(endpoint_id)
    assert (ended.next_slot, ended.overrun_since, ended.lease_owner) == (
        T0 + seconds(20),
        None,
        None,
    )


async def test_skip_still_holds_the_slot_that_comes_while_a_call_runs(store: Store) -> None:
    endpoint_id = await _declare(store, Overlap.SKIP)

    [first] = await _claims(store, 0)

    assert await _claims(store, 5) == []
    await _finish(store, first, 9)
    assert await _statuses(store, endpoint_id) == [(0, RunStatus.SUCCESS), (5, RunStatus.SKIPPED)]


async def test_overlapping_finishes_add_up_on_the_endpoint(store: Store) -> None:
    """Each finish re-plans the endpoint as the one before left it: two failures in a row
    count two, whichever claim saw the endpoint first."""
    endpoint_id = await _declare(store)
    [first] = await _claims(store, 0)
    [second] = await _claims(store, 5)

    await _finish(store, first, 9, FAILED)
    await _finish(store, second, 14, FAILED)

    ended = await store.catalog.get_endpoint(endpoint_id)
    assert ended.failure_count == 2
    assert ended.last_slot_at == T0 + seconds(5)


async def test_a_run_asked_for_by_hand_keeps_its_lease_through_an_overlapping_finish(
    store: Store,
) -> None:
    endpoint_id = await _declare(store)
    [scheduled] = await _claims(store, 0)
    endpoint = await store.catalog.get_endpoint(endpoint_id)
    asked = queued_run(
        endpoint,
        RunTrigger.MANUAL,
        slot_at=T0 + seconds(1),
        due_at=T0 + seconds(1),
        requested_by="ann",
        now=T0 + seconds(1),
    )
    manual = await store.claims.enqueue([asked])
    [by_hand] = await _claims(store, 1, worker="w2")

    await _finish(store, scheduled, 9)
    held = await store.catalog.get_endpoint(endpoint_id)
    await finish_one(store.claims, by_hand, "w2", OK, T0 + seconds(10))

    assert by_hand.queued is not None and by_hand.run_id == manual[0].id
    assert held.lease_owner == "w2"
    assert (await store.catalog.get_endpoint(endpoint_id)).lease_owner is None


async def test_the_reaper_ends_a_dead_workers_run_alone_and_nobody_runs_its_slot_again(
    store: Store,
) -> None:
    endpoint_id = await _declare(store)
    [dead] = await _claims(store, 0, worker="dead")
    [alive] = await _claims(store, 5)
    await store.claims.extend_lease(alive, "w1", T0 + seconds(5 + 2 * LEASE_SECONDS))

    reaped = await store.claims.reap(T0 + seconds(LEASE_SECONDS + 1))
    with pytest.raises(LeaseLost):
        await finish_one(store.claims, dead, "dead", OK, T0 + seconds(LEASE_SECONDS + 2))
    with pytest.raises(LeaseLost):
        await store.claims.extend_lease(dead, "dead", T0 + seconds(100))
    await _finish(store, alive, LEASE_SECONDS + 2)

    assert reaped == 1
    runs = {(r.slot_at - T0).total_seconds(): r for r in await store.runs.list_runs(endpoint_id)}
    assert (runs[0].status, runs[0].error_kind) == (RunStatus.ABANDONED, ErrorKind.LEASE_EXPIRED)
    assert runs[5].status is RunStatus.SUCCESS
    claimed = await _claims(store, LEASE_SECONDS + 2)
    assert [c.slot_at for c in claimed] and all(c.slot_at > T0 + seconds(5) for c in claimed)


async def test_a_slot_given_back_unstarted_is_claimed_again(store: Store) -> None:
    endpoint_id = await _declare(store)
    [given] = await _claims(store, 0)

    await store.claims.release(given, "w1")
    [again] = await _claims(store, 1, worker="w2")

    assert again.slot_at == T0
    assert await _running(store, endpoint_id) == [0]


async def test_a_limit_bounds_the_calls_that_allow_lets_pile_up(store: Store) -> None:
    endpoint_id = await _declare(store, limit=Limit("partner", concurrency=2))

    [first] = await _claims(store, 0)
    [second] = await _claims(store, 5)
    held = await _claims(store, 10)  # two calls of the key in flight already
    statuses = {s.state.key: s.in_flight for s in await store.catalog.limits()}
    await _finish(store, first, 11)
    [third] = await _claims(store, 11)

    assert held == []
    assert statuses == {"partner": 2}
    assert (second.slot_at, third.slot_at) == (T0 + seconds(5), T0 + seconds(10))
    assert await _running(store, endpoint_id) == [5, 10]
