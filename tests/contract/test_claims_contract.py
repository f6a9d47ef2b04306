"""ClaimRepository contract, run on every store (memory, SQLite, PostgreSQL)."""

from __future__ import annotations

import asyncio

import pytest

from cronpilot.domain.errors import LeaseLost
from cronpilot.domain.model import (
    ErrorKind,
    Finish,
    OneShotHint,
    Recorded,
    Response,
    RunStatus,
    ScheduleSource,
)
from cronpilot.domain.ports import Store
from cronpilot.domain.runs.transitions import started_run
from cronpilot.usecases.declarations import apply_to_catalog
from tests.contract.builders import (
    LEASE_SECONDS,
    OK,
    T0,
    add_endpoint,
    claim_one,
    declaration,
    run_once,
    seconds,
    spec,
)
from tests.support.finishing import finish_one
from tests.support.scheduling import set_hints

FAILED = Response(status_code=503)


async def test_claim_returns_due_endpoints_earliest_first_within_limit(store: Store) -> None:
    late = await add_endpoint(store, "j", "late", T0 - seconds(10))
    early = await add_endpoint(store, "j", "early", T0 - seconds(30))
    await add_endpoint(store, "j", "future", T0 + seconds(10))

    first = await store.claims.claim_due(T0, "w1", LEASE_SECONDS, 1)
    rest = await store.claims.claim_due(T0, "w1", LEASE_SECONDS, 10)

    assert [c.endpoint.id for c in first] == [early]
    assert [c.endpoint.id for c in rest] == [late]
    assert await store.claims.claim_due(T0, "w2", LEASE_SECONDS, 10) == []
    assert await store.claims.claim_due(T0, "w1", LEASE_SECONDS, 0) == []


async def test_claim_ahead_takes_slots_due_by_the_horizon_with_the_lease_from_now(
    store: Store,
) -> None:
    soon = await add_endpoint(store, "j", "soon", T0 + seconds(1))
    await add_endpoint(store, "j", "later", T0 + seconds(3))

    [claim] = await store.claims.claim_due(T0, "w1", LEASE_SECONDS, 10, T0 + seconds(2))

    assert (claim.endpoint.id, claim.slot_at) == (soon, T0 + seconds(1))
    assert claim.lease_until == T0 + seconds(LEASE_SECONDS)
    assert await store.runs.list_runs(soon) == [started_run(claim, "w1", T0)]
    # A horizon before `now` claims what is due now, never less.
    assert await store.claims.claim_due(T0 + seconds(3), "w2", LEASE_SECONDS, 10, T0) != []


async def test_claim_leases_and_inserts_the_running_run(store: Store) -> None:
    endpoint_id = await add_endpoint(store, "j", "e", T0 - seconds(5))

    claim = await claim_one(store, T0, "w1")

    assert (claim.slot_at, claim.schedule_source) == (T0 - seconds(5), ScheduleSource.BASELINE)
    assert claim.lease_until == T0 + seconds(LEASE_SECONDS)
    assert (claim.endpoint.lease_owner, claim.endpoint.lease_until) == ("w1", claim.lease_until)
    assert claim.endpoint == await store.catalog.get_endpoint(endpoint_id)
    assert await store.runs.list_runs(endpoint_id) == [started_run(claim, "w1", T0)]
    assert await store.claims.next_due_at() is None


async def test_concurrent_claimers_never_share_an_endpoint(store: Store) -> None:
    for n in range(24):
        await add_endpoint(store, "j", f"e{n:02}", T0 - seconds(n))

    seen: list[str] = []
    for _ in range(6):
        async with asyncio.timeout(10):
            a, b = await asyncio.gather(
                store.claims.claim_due(T0, "a", LEASE_SECONDS, 3),
                store.claims.claim_due(T0, "b", LEASE_SECONDS, 3),
            )
        ids_a = {c.endpoint.id for c in a}
        ids_b = {c.endpoint.id for c in b}
        assert not ids_a & ids_b
        seen.extend(ids_a | ids_b)
        for claim in a:
            assert (await store.catalog.get_endpoint(claim.endpoint.id)).lease_owner == "a"

    assert len(seen) == len(set(seen)) == 24


async def test_finish_records_the_run_and_replans(store: Store) -> None:
    endpoint_id = await add_endpoint(store, "j", "e", T0)
    claim = await claim_one(store, T0)
    body = {"rows": [{"id": 1, "price": 9.5, "name": "Ærø"}], "next": None}

    run = await finish_one(
        store.claims,
        claim,
        "w1",
        Response(status_code=200, body=body, size_bytes=99),
        T0 + seconds(2),
    )

    assert run == await store.runs.get_run(claim.run_id)
    assert (run.status, run.status_code, run.body, run.size_bytes) == (
        RunStatus.SUCCESS,
        200,
        body,
        99,
    )
    assert (run.finished_at, run.duration_ms) == (T0 + seconds(2), 2000.0)
    endpoint = await store.catalog.get_endpoint(endpoint_id)
    assert (endpoint.lease_owner, endpoint.lease_until) == (None, None)
    assert (endpoint.last_slot_at, endpoint.next_run_at) == (T0, T0 + seconds(60))
    assert endpoint.failure_count == 0


async def test_finish_plans_with_the_schedule_declared_while_the_call_ran(store: Store) -> None:
    endpoint_id = await add_endpoint(store, "j", "e", T0)
    claim = await claim_one(store, T0)
    await apply_to_catalog(
        store.catalog,
        [declaration("j", spec("e", every=10, max_interval_seconds=5))],
        T0 + seconds(1),
    )

    await finish_one(store.claims, claim, "w1", OK, T0 + seconds(2))

    endpoint = await store.catalog.get_endpoint(endpoint_id)
    assert endpoint.spec.schedule.interval_seconds == 10
    assert (endpoint.lease_owner, endpoint.last_slot_at) == (None, T0)
    # Every 10 s from the slot, clamped to at most 5 s from the finish.
    assert endpoint.next_run_at == T0 + seconds(7)


async def test_failures_are_counted_and_reset(store: Store) -> None:
    endpoint_id = await add_endpoint(store, "j", "e", T0)

    failed = await run_once(store, T0, FAILED)
    assert failed.status is RunStatus.FAILED
    assert (await store.catalog.get_endpoint(endpoint_id)).failure_count == 1

    due = (await store.catalog.get_endpoint(endpoint_id)).next_run_at
    assert due is not None
    await run_once(store, due, OK)
    assert (await store.catalog.get_endpoint(endpoint_id)).failure_count == 0


async def test_finish_is_fenced_by_the_lease(store: Store) -> None:
    endpoint_id = await add_endpoint(store, "j", "e", T0)
    claim = await claim_one(store, T0, "w1")
    before = await store.catalog.get_endpoint(endpoint_id)

    with pytest.raises(LeaseLost):
        await finish_one(store.claims, claim, "intruder", OK, T0 + seconds(1))

    assert await store.catalog.get_endpoint(endpoint_id) == before
    assert (await store.runs.get_run(claim.run_id)).status is RunStatus.RUNNING


async def test_finish_after_the_reaper_took_the_run_is_refused(store: Store) -> None:
    endpoint_id = await add_endpoint(store, "j", "e", T0)
    stale = await claim_one(store, T0, "w1")
    await store.claims.reap(T0 + seconds(LEASE_SECONDS + 1))
    # The same worker holds a new lease on the endpoint: the old claim must still lose.
    fresh = await claim_one(store, T0 + seconds(60), "w1")

    with pytest.raises(LeaseLost):
        await finish_one(store.claims, stale, "w1", OK, T0 + seconds(61))

    assert (await store.runs.get_run(stale.run_id)).status is RunStatus.ABANDONED
    assert (await store.catalog.get_endpoint(endpoint_id)).lease_owner == "w1"
    assert (await store.runs.get_run(fresh.run_id)).status is RunStatus.RUNNING


async def test_extend_lease(store: Store) -> None:
    endpoint_id = await add_endpoint(store, "j", "e", T0)
    claim = await claim_one(store, T0, "w1")

    await store.claims.extend_lease(claim, "w1", T0 + seconds(300))

    assert (await store.catalog.get_endpoint(endpoint_id)).lease_until == T0 + seconds(300)
    assert await store.claims.reap(T0 + seconds(LEASE_SECONDS + 1)) == 0
    with pytest.raises(LeaseLost):
        await store.claims.extend_lease(claim, "intruder", T0 + seconds(600))


async def test_a_slot_that_already_ran_is_not_run_again(store: Store) -> None:
    # Without a floor, a one-shot hint may plan the slot that just ran; the store refuses it.
    await apply_to_catalog(store.catalog, [declaration("j", spec("e", floor_seconds=0.0))], T0)
    endpoint_id = (await store.catalog.get_endpoint("j/e")).id
    await run_once(store, T0)
    # A one-shot hint in the past brings the endpoint back to the slot that already ran.
    hint = OneShotHint(T0, expires_at=T0 + seconds(600), reason="again")
    replay = await set_hints(store.catalog, endpoint_id, None, hint, T0)
    assert replay.next_run_at == T0

    assert await store.claims.claim_due(T0, "w2", LEASE_SECONDS, 10) == []

    assert [r.slot_at for r in await store.runs.list_runs(endpoint_id)] == [T0]
    endpoint = await store.catalog.get_endpoint(endpoint_id)
    assert (endpoint.lease_owner, endpoint.oneshot_hint) == (None, None)
    assert endpoint.next_run_at == T0 + seconds(60)


async def test_reap_abandons_runs_of_expired_leases(store: Store) -> None:
    endpoint_id = await add_endpoint(store, "j", "e", T0)
    await run_once(store, T0, FAILED)
    backoff = (await store.catalog.get_endpoint(endpoint_id)).next_run_at
    assert backoff is not None
    claim = await claim_one(store, backoff, "w1")
    expired_at = claim.lease_until + seconds(1)

    assert await store.claims.reap(claim.lease_until) == 0
    assert await store.claims.reap(expired_at) == 1
    assert await store.claims.reap(expired_at) == 0

    run = await store.runs.get_run(claim.run_id)
    assert (run.status, run.error_kind, run.finished_at) == (
        RunStatus.ABANDONED,
        ErrorKind.LEASE_EXPIRED,
        expired_at,
    )
    endpoint = await store.catalog.get_endpoint(endpoint_id)
    assert (endpoint.lease_owner, endpoint.last_slot_at) == (None, claim.slot_at)
    assert endpoint.failure_count == 1
    assert endpoint.next_run_at is not None and endpoint.next_run_at > claim.slot_at


async def test_release_gives_the_slot_back(store: Store) -> None:
    endpoint_id = await add_endpoint(store, "j", "e", T0)
    claim = await claim_one(store, T0, "w1")

    await store.claims.release(claim, "intruder")
    assert (await store.catalog.get_endpoint(endpoint_id)).lease_owner == "w1"

    await store.claims.release(claim, "w1")

    assert await store.runs.list_runs(endpoint_id) == []
    endpoint = await store.catalog.get_endpoint(endpoint_id)
    assert (endpoint.lease_owner, endpoint.next_run_at) == (None, T0)
    again = await claim_one(store, T0, "w2")
    assert again.slot_at == T0


async def test_abandon_marks_the_run_and_frees_the_endpoint(store: Store) -> None:
    endpoint_id = await add_endpoint(store, "j", "e", T0)
    claim = await claim_one(store, T0, "w1")

    await store.claims.abandon(claim, "intruder", "not mine", T0 + seconds(1))
    assert (await store.runs.get_run(claim.run_id)).status is RunStatus.RUNNING

    await store.claims.abandon(claim, "w1", "shutting down", T0 + seconds(1))

    run = await store.runs.get_run(claim.run_id)
    assert (run.status, run.error_kind, run.error_message) == (
        RunStatus.ABANDONED,
        ErrorKind.SHUTDOWN,
        "shutting down",
    )
    endpoint = await store.catalog.get_endpoint(endpoint_id)
    assert (endpoint.lease_owner, endpoint.next_run_at) == (None, T0 + seconds(60))


async def test_next_due_at_is_the_earliest_unleased(store: Store) -> None:
    assert await store.claims.next_due_at() is None
    await add_endpoint(store, "j", "a", T0 + seconds(30))
    await add_endpoint(store, "j", "b", T0 + seconds(10))

    assert await store.claims.next_due_at() == T0 + seconds(10)
    await claim_one(store, T0 + seconds(10))
    assert await store.claims.next_due_at() == T0 + seconds(30)


async def test_concurrent_finishes_are_each_fenced_on_their_own(store: Store) -> None:
    """Finishes arriving together may share a transaction (the SQL store group-commits them):
    one whose lease was lost must not keep the others from being recorded."""
    for name in ("a", "b", "c"):
        await add_endpoint(store, "j", name, T0)
    a, b, c = await store.claims.claim_due(T0, "w1", LEASE_SECONDS, 3)
    for kept in (a, c):
        await store.claims.extend_lease(kept, "w1", T0 + seconds(300))
    # b's lease expires and is reaped; the same worker claims its endpoint afresh.
    assert await store.claims.reap(T0 + seconds(LEASE_SECONDS + 1)) == 1
    fresh = await claim_one(store, T0 + seconds(60), "w1")
    assert fresh.endpoint.id == b.endpoint.id

    outcomes = await store.claims.finish_many(
        [Finish(claim, "w1", OK, T0 + seconds(61), LEASE_SECONDS) for claim in (a, b, c)]
    )

    assert isinstance(outcomes[1], LeaseLost)
    for claim, outcome in zip((a, c), (outcomes[0], outcomes[2]), strict=True):
        assert isinstance(outcome, Recorded)
        assert outcome.run == await store.runs.get_run(claim.run_id)
        assert (await store.runs.get_run(claim.run_id)).status is RunStatus.SUCCESS
        assert (await store.catalog.get_endpoint(claim.endpoint.id)).lease_owner is None
    assert (await store.runs.get_run(b.run_id)).status is RunStatus.ABANDONED
    assert (await store.runs.get_run(fresh.run_id)).status is RunStatus.RUNNING
    assert (await store.catalog.get_endpoint(b.endpoint.id)).lease_owner == "w1"
