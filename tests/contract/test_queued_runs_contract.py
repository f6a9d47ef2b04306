"""Queued runs (run now, backfill), on every store: enqueued under the slot key, claimed beside
due slots while their endpoint is free, finished without moving the schedule, given back by
release, abandoned by the reaper, never pruned, never started twice."""

from __future__ import annotations

import asyncio
from datetime import datetime

import pytest
from sqlalchemy import delete, text
from sqlalchemy.ext.asyncio import AsyncEngine

from cronpilot.adapters.sql import open_sql_store
from cronpilot.adapters.sql.tables import run_queue
from cronpilot.domain.errors import LeaseLost, RunNotFound
from cronpilot.domain.graph.dependencies import with_dependants
from cronpilot.domain.model import (
    Claim,
    Endpoint,
    ErrorKind,
    Finish,
    Pause,
    Response,
    Run,
    RunStatus,
    RunTrigger,
    Schedule,
    ScheduleSource,
    Steering,
)
from cronpilot.domain.ports import SecretCipher, Store
from cronpilot.domain.runs.requested_runs import ahead_of_schedule, backfill_runs
from cronpilot.domain.runs.transitions import queued_run, started_run
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
from tests.support.finishing import finish_one, record_one
from tests.support.scheduling import set_pause

FAILED = Response(status_code=503)
WHO = "cli:ann@web-1"


def _queued(
    endpoint: Endpoint,
    slot_at: datetime,
    due_at: datetime | None = None,
    trigger: RunTrigger = RunTrigger.MANUAL,
) -> Run:
    return queued_run(
        endpoint,
        trigger,
        slot_at=slot_at,
        due_at=slot_at if due_at is None else due_at,
        requested_by=WHO,
        now=slot_at,
    )


async def _enqueue_manual(store: Store, ref: str, at: datetime) -> Run:
    run = _queued(await store.catalog.get_endpoint(ref), at)
    assert await store.claims.enqueue([run]) == [run]
    return run


def _schedule_state(endpoint: Endpoint) -> tuple[object, ...]:
    return (
        endpoint.failure_count,
        endpoint.last_slot_at,
        endpoint.next_run_at,
        endpoint.next_run_source,
        endpoint.oneshot_hint,
    )


async def test_a_queued_run_is_claimed_with_its_trigger_slot_and_lease(store: Store) -> None:
    endpoint_id = await add_endpoint(store, "j", "e", T0)
    await run_once(store, T0)
    queued = await _enqueue_manual(store, "j/e", T0 + seconds(10))
    assert await store.runs.get_run(queued.id) == queued
    assert queued.status is RunStatus.QUEUED

    claim = await claim_one(store, T0 + seconds(11))

    assert claim.queued == queued
    assert (claim.run_id, claim.slot_at, claim.call_at) == (
        queued.id,
        queued.slot_at,
        queued.slot_at,
    )
    assert claim.lease_until == T0 + seconds(11 + LEASE_SECONDS)
    assert claim.endpoint == await store.catalog.get_endpoint(endpoint_id)
    assert claim.endpoint.lease_owner == "w1"
    running = await store.runs.get_run(queued.id)
    assert running == started_run(claim, "w1", T0 + seconds(11))
    assert (running.status, running.trigger, running.worker_id, running.requested_by) == (
        RunStatus.RUNNING,
        RunTrigger.MANUAL,
        "w1",
        WHO,
    )
    assert await store.claims.next_due_at() is None


async def test_a_queued_run_waits_while_its_endpoint_is_leased(store: Store) -> None:
    await add_endpoint(store, "j", "e", T0)
    scheduled = await claim_one(store, T0)
    queued = await _enqueue_manual(store, "j/e", T0 + seconds(1))

    assert await store.claims.claim_due(T0 + seconds(2), "w2", LEASE_SECONDS, 10) == []
    assert await store.claims.next_due_at() is None
    assert (await store.runs.get_run(queued.id)).status is RunStatus.QUEUED

    await finish_one(store.claims, scheduled, "w1", OK, T0 + seconds(3))
    assert await store.claims.next_due_at() == queued.due_at
    [claim] = await store.claims.claim_due(T0 + seconds(3), "w2", LEASE_SECONDS, 10)
    assert (claim.run_id, claim.endpoint.lease_owner) == (queued.id, "w2")


async def test_queued_runs_come_first_one_per_endpoint_per_claim(store: Store) -> None:
    await add_endpoint(store, "j", "a", T0)
    await add_endpoint(store, "j", "b", T0)
    first = await _enqueue_manual(store, "j/a", T0 - seconds(2))
    second = await _enqueue_manual(store, "j/a", T0 - seconds(1))

    claims = await store.claims.claim_due(T0, "w1", LEASE_SECONDS, 10)

    # a's earliest queued run, then b's slot: a is leased, so its slot and second run wait.
    assert [(c.endpoint.name, c.run_id) for c in claims] == [
        ("a", first.id),
        ("b", claims[1].run_id),
    ]
    assert claims[1].queued is None
    assert (await store.runs.get_run(second.id)).status is RunStatus.QUEUED
    for claim in claims:
        await finish_one(store.claims, claim, "w1", OK, T0)
    [again] = await store.claims.claim_due(T0, "w1", LEASE_SECONDS, 1)
    assert again.run_id == second.id


async def test_a_paced_run_is_not_claimed_before_it_is_due(store: Store) -> None:
    endpoint_id = await add_endpoint(store, "j", "e", T0)
    await run_once(store, T0)
    endpoint = await store.catalog.get_endpoint(endpoint_id)
    later = _queued(endpoint, T0 - seconds(600), T0 + seconds(5), RunTrigger.BACKFILL)
    await store.claims.enqueue([later])

    assert await store.claims.next_due_at() == T0 + seconds(5)
    assert await store.claims.claim_due(T0 + seconds(4), "w1", LEASE_SECONDS, 10) == []
    # Claimed ahead, like a slot: the worker calls it at `call_at`.
    [claim] = await store.claims.claim_due(
        T0 + seconds(4), "w1", LEASE_SECONDS, 10, T0 + seconds(5)
    )
    assert (claim.slot_at, claim.call_at) == (T0 - seconds(600), T0 + seconds(5))


MANUAL, BACKFILL = RunTrigger.MANUAL, RunTrigger.BACKFILL


@pytest.mark.parametrize(
    ("trigger", "due_in", "schedule_in", "queued_first"),
    [
        (MANUAL, -1.0, 10.0, True),
        (BACKFILL, -1.0, 10.0, True),
        (MANUAL, -1.0, -0.5, True),
        (MANUAL, -0.25, -0.5, False),
        (MANUAL, -0.5, -0.5, False),
        (BACKFILL, -1.0, -0.5, False),
        (MANUAL, -1.0, None, True),
        (BACKFILL, -1.0, None, True),
    ],
    ids=[
        "manual, schedule not due",
        "backfill, schedule not due",
        "manual due before the slot",
        "manual due after the slot",
        "manual due with the slot",
        "backfill due before the slot",
        "manual, paused",
        "backfill, paused",
    ],
)
async def test_a_queued_run_goes_before_the_schedule_as_the_domain_rule_says(
    store: Store,
    trigger: RunTrigger,
    due_in: float,
    schedule_in: float | None,
    queued_first: bool,
) -> None:
    """Every store claims an endpoint's queued run before its own next run exactly when
    `ahead_of_schedule` says so (the SQL claim mirrors it in SQL)."""
    now = T0 + seconds(3600)
    endpoint_id = await add_endpoint(store, "j", "e", now + seconds(schedule_in or 0))
    if schedule_in is None:
        await set_pause(store.catalog, endpoint_id, Pause("by hand"), now)
    endpoint = await store.catalog.get_endpoint(endpoint_id)
    queued = _queued(endpoint, T0, now + seconds(due_in), trigger)
    await store.claims.enqueue([queued])
    assert ahead_of_schedule(trigger, now + seconds(due_in), endpoint.next_run_at, now) is (
        queued_first
    )

    [claim] = await store.claims.claim_due(now, "w1", LEASE_SECONDS, 10)

    assert (claim.queued is not None) is queued_first


async def test_a_backfill_whose_calls_outlast_its_spacing_leaves_the_schedule_its_slots(
    store: Store,
) -> None:
    """119 backfill runs paced 1 s apart, each call taking 2 s: their due times soon lie in
    the past, yet every minute's slot still runs, within its grace, between two of them."""
    await apply_to_catalog(store.catalog, [declaration("j", spec("e", every=60.0))], T0)
    endpoint = await store.catalog.get_endpoint("j/e")
    now = T0 + seconds(3600)
    missing = [T0 - seconds(60 * i) for i in range(1, 120)]
    await store.claims.enqueue(backfill_runs(endpoint, missing, 200, WHO, now))

    scheduled: list[tuple[datetime, datetime]] = []
    backfilled = 0
    while now < T0 + seconds(3900):
        claims = await store.claims.claim_due(now, "w1", LEASE_SECONDS, 10)
        if not claims:
            now += seconds(0.5)
        for claim in claims:
            started = now
            now += seconds(2)
            run = await finish_one(store.claims, claim, "w1", OK, now)
            if run.trigger is RunTrigger.SCHEDULE:
                scheduled.append((run.slot_at, started))
            else:
                backfilled += 1

    assert [slot for slot, _ in scheduled] == [T0 + seconds(3600 + 60 * i) for i in range(5)]
    assert all(started - slot <= seconds(2) for slot, started in scheduled)
    assert backfilled == 119


async def test_finishing_a_queued_run_leaves_the_schedule_as_it_was(store: Store) -> None:
    endpoint_id = await add_endpoint(store, "j", "e", T0)
    await run_once(store, T0, FAILED)
    before = await store.catalog.get_endpoint(endpoint_id)
    assert before.failure_count == 1

    for at, response, status in (
        (T0 + seconds(5), FAILED, RunStatus.FAILED),
        (T0 + seconds(6), OK, RunStatus.SUCCESS),
    ):
        queued = await _enqueue_manual(store, "j/e", at)
        claim = await claim_one(store, at)
        run = await finish_one(store.claims, claim, "w1", response, at + seconds(1))

        assert (run.id, run.status, run.trigger, run.slot_at) == (
            queued.id,
            status,
            RunTrigger.MANUAL,
            at,
        )
        assert run == await store.runs.get_run(queued.id)
        after = await store.catalog.get_endpoint(endpoint_id)
        assert (after.lease_owner, after.lease_until) == (None, None)
        assert _schedule_state(after) == _schedule_state(before)


async def test_a_queued_run_s_retry_after_holds_the_schedule_back(store: Store) -> None:
    """The endpoint asked not to be called for 5 minutes: the schedule waits too. Its
    `Cronpilot-Next-Run` sets no hint, and the next answer to a run by hand lifts nothing."""
    endpoint_id = await add_endpoint(store, "j", "e", T0)
    await run_once(store, T0)
    before = await store.catalog.get_endpoint(endpoint_id)
    busy = Response(
        status_code=429,
        error_kind=ErrorKind.HTTP_STATUS,
        steering=Steering(retry_after_seconds=300, next_run_interval_seconds=20),
    )

    await _enqueue_manual(store, "j/e", T0 + seconds(10))
    await finish_one(
        store.claims, await claim_one(store, T0 + seconds(10)), "w1", busy, T0 + seconds(11)
    )

    held = await store.catalog.get_endpoint(endpoint_id)
    assert (held.retry_after_at, held.next_run_at, held.next_run_source) == (
        T0 + seconds(311),
        T0 + seconds(311),
        ScheduleSource.RETRY_AFTER,
    )
    assert (held.interval_hint, held.failure_count, held.last_slot_at) == (
        None,
        before.failure_count,
        before.last_slot_at,
    )
    await _enqueue_manual(store, "j/e", T0 + seconds(20))
    await finish_one(
        store.claims, await claim_one(store, T0 + seconds(20)), "w1", OK, T0 + seconds(21)
    )
    assert await store.catalog.get_endpoint(endpoint_id) == held


async def test_enqueue_refuses_slots_that_have_a_run_whatever_its_status(store: Store) -> None:
    endpoint_id = await add_endpoint(store, "j", "e", T0)
    await run_once(store, T0)
    endpoint = await store.catalog.get_endpoint(endpoint_id)
    slots = [T0 - seconds(120), T0 - seconds(60)]
    first = [_queued(endpoint, slot, T0, RunTrigger.BACKFILL) for slot in slots]

    assert await store.claims.enqueue(first) == first
    again = [_queued(endpoint, slot, T0, RunTrigger.BACKFILL) for slot in [*slots, T0]]
    fresh = _queued(endpoint, T0 - seconds(180), T0, RunTrigger.BACKFILL)
    assert await store.claims.enqueue([*again, fresh]) == [fresh]

    assert await store.runs.slots_taken(endpoint_id, T0 - seconds(150), T0) == {*slots, T0}
    queued = [r for r in await store.runs.list_runs(endpoint_id) if r.status is RunStatus.QUEUED]
    assert {r.id for r in queued} == {*(r.id for r in first), fresh.id}


async def test_a_released_queued_run_goes_back_to_the_queue(store: Store) -> None:
    endpoint_id = await add_endpoint(store, "j", "e", T0)
    await run_once(store, T0)
    before = await store.catalog.get_endpoint(endpoint_id)
    queued = await _enqueue_manual(store, "j/e", T0 + seconds(1))
    claim = await claim_one(store, T0 + seconds(1))

    await store.claims.release(claim, "w1")

    assert await store.runs.get_run(queued.id) == queued
    assert await store.catalog.get_endpoint(endpoint_id) == before
    [again] = await store.claims.claim_due(T0 + seconds(2), "w2", LEASE_SECONDS, 10)
    assert again.run_id == queued.id
    # The first claim's lease is gone: releasing it again changes nothing.
    await store.claims.release(claim, "w1")
    assert (await store.runs.get_run(queued.id)).worker_id == "w2"


async def test_the_reaper_abandons_a_claimed_queued_run_and_keeps_the_schedule(
    store: Store,
) -> None:
    endpoint_id = await add_endpoint(store, "j", "e", T0)
    await run_once(store, T0)
    before = await store.catalog.get_endpoint(endpoint_id)
    claimed = await _enqueue_manual(store, "j/e", T0 + seconds(1))
    await claim_one(store, T0 + seconds(1))
    waiting = await _enqueue_manual(store, "j/e", T0 + seconds(2))

    assert await store.claims.reap(T0 + seconds(1 + LEASE_SECONDS + 1)) == 1

    reaped = await store.runs.get_run(claimed.id)
    assert (reaped.status, reaped.error_kind) == (RunStatus.ABANDONED, ErrorKind.LEASE_EXPIRED)
    assert await store.runs.get_run(waiting.id) == waiting
    after = await store.catalog.get_endpoint(endpoint_id)
    assert (after.lease_owner, _schedule_state(after)) == (None, _schedule_state(before))


async def test_abandoning_a_queued_run_at_shutdown_keeps_the_schedule(store: Store) -> None:
    endpoint_id = await add_endpoint(store, "j", "e", T0)
    await run_once(store, T0)
    before = await store.catalog.get_endpoint(endpoint_id)
    queued = await _enqueue_manual(store, "j/e", T0 + seconds(1))
    claim = await claim_one(store, T0 + seconds(1))

    await store.claims.abandon(claim, "w1", "stopping", T0 + seconds(2))

    assert (await store.runs.get_run(queued.id)).status is RunStatus.ABANDONED
    after = await store.catalog.get_endpoint(endpoint_id)
    assert (after.lease_owner, _schedule_state(after)) == (None, _schedule_state(before))
    with pytest.raises(LeaseLost):
        await finish_one(store.claims, claim, "w1", OK, T0 + seconds(3))


async def test_retention_never_prunes_queued_runs(store: Store) -> None:
    endpoint_id = await add_endpoint(store, "j", "e", T0 - seconds(120))
    for n in (2, 1, 0):
        await run_once(store, T0 - seconds(60 * n))
    endpoint = await store.catalog.get_endpoint(endpoint_id)
    backfill = _queued(endpoint, T0 - seconds(600), T0 + seconds(60), RunTrigger.BACKFILL)
    await store.claims.enqueue([backfill])

    assert await store.runs.prune(keep_per_endpoint=1) == 2

    assert {r.slot_at for r in await store.runs.list_runs(endpoint_id)} == {T0, backfill.slot_at}


async def test_two_claimers_never_start_one_queued_run(store: Store) -> None:
    for n in range(12):
        await add_endpoint(store, "j", f"e{n:02}", T0 + seconds(3600))
    endpoints = await store.catalog.list_endpoints("j")
    queued = [
        _queued(endpoint, T0 - seconds(k), T0 - seconds(k))
        for endpoint in endpoints
        for k in (1, 2)
    ]
    assert len(await store.claims.enqueue(queued)) == 24

    started: list[Claim] = []
    for round_ in range(4):
        async with asyncio.timeout(10):
            batches = await asyncio.gather(
                *(
                    store.claims.claim_due(T0, worker, LEASE_SECONDS, 4)
                    for worker in ("a", "b", "c")
                )
            )
        claims = [claim for batch in batches for claim in batch]
        endpoint_ids = [claim.endpoint.id for claim in claims]
        assert len(endpoint_ids) == len(set(endpoint_ids)), f"round {round_}: an endpoint twice"
        for claim in claims:
            await finish_one(store.claims, claim, claim.endpoint.lease_owner or "", OK, T0)
        started += claims

    assert sorted(c.run_id for c in started) == sorted(r.id for r in queued)
    for run in queued:
        assert (await store.runs.get_run(run.id)).status is RunStatus.SUCCESS


async def test_a_manual_run_of_a_dag_root_starts_its_dependants(store: Store) -> None:
    specs = [spec("root"), spec("child", depends_on=("root",), schedule=Schedule())]
    await apply_to_catalog(store.catalog, [declaration("etl", *with_dependants(specs))], T0)
    first = await record_one(store.claims, Finish(await claim_one(store, T0), "w1", OK, T0, 60))
    # The scheduled root's DAG run: its child is started and recorded too.
    for started in first.started:
        await finish_one(store.claims, started, "w1", OK, T0)
    queued = await _enqueue_manual(store, "etl/root", T0 + seconds(10))
    claim = await claim_one(store, T0 + seconds(10))
    root_before = await store.catalog.get_endpoint("etl/root")

    recorded = await record_one(
        store.claims, Finish(claim, "w1", OK, T0 + seconds(11), LEASE_SECONDS)
    )
    run, [child] = recorded.run, recorded.started

    assert (run.id, run.trigger, run.status) == (queued.id, RunTrigger.MANUAL, RunStatus.SUCCESS)
    assert child.endpoint.name == "child"
    assert child.dag is not None and child.dag.dag_run_id == run.trace_id
    root = await store.catalog.get_endpoint("etl/root")
    assert root.lease_owner is None
    assert _schedule_state(root) == _schedule_state(root_before)


async def test_postgres_never_starts_a_queued_run_that_another_transaction_ended(
    postgres_url: str, cipher: SecretCipher
) -> None:
    """The race the claim statement rechecks: a run still queued when the statement began, but
    taken off the queue by another transaction before the claim could start it (here only its
    queued row deleted, which locks no endpoint). The claim leaves it alone and gives the
    endpoint back."""
    store = await open_sql_store(postgres_url, cipher)
    try:
        endpoint_id = await add_endpoint(store, "j", "e", T0 + seconds(3600))
        queued = await _enqueue_manual(store, "j/e", T0)
        async with store.engine.connect() as other:
            await other.execute(delete(run_queue).where(run_queue.c.id == queued.id))
            claiming = asyncio.create_task(store.claims.claim_due(T0, "w1", LEASE_SECONDS, 10))
            async with asyncio.timeout(10):
                await _until_waiting_for_a_lock(store.engine)
            await other.commit()
        async with asyncio.timeout(10):
            assert await claiming == []

        with pytest.raises(RunNotFound):
            await store.runs.get_run(queued.id)
        assert (await store.catalog.get_endpoint(endpoint_id)).lease_owner is None
    finally:
        await store.close()


async def _until_waiting_for_a_lock(engine: AsyncEngine) -> None:
    query = text(
        "SELECT count(*) FROM pg_stat_activity "
        "WHERE datname = current_database() AND wait_event_type = 'Lock'"
    )
    async with engine.connect() as conn:
        while not (await conn.execute(query)).scalar_one():
            await conn.rollback()
            await asyncio.sleep(0.01)
