"""Jitter, catch-up and the floor in every store (memory, SQLite, PostgreSQL): the declaration
round-trips, a jittered slot is claimed at its call time under its grid slot, and a slot
missed while no worker ran is caught up by the endpoint's rule at the claim."""

from __future__ import annotations

from datetime import datetime, timedelta

from cronpilot.domain.model import CatchUp, Claim, RunStatus, ScheduleSource
from cronpilot.domain.ports import Store
from cronpilot.domain.schedule.jitter import jittered
from cronpilot.usecases.declarations import apply_to_catalog
from tests.contract.builders import LEASE_SECONDS, OK, T0, declaration, seconds, spec
from tests.support.finishing import finish_one


async def test_jitter_catch_up_and_floor_round_trip_and_a_new_floor_updates(store: Store) -> None:
    declared = spec(
        "e",
        jitter_seconds=7.5,
        catch_up=CatchUp.NONE,
        catch_up_window_seconds=600.0,
        floor_seconds=2.0,
    )
    await apply_to_catalog(store.catalog, [declaration("j", declared)], T0)

    stored = await store.catalog.get_endpoint("j/e")
    assert stored.spec == declared
    [listed] = await store.catalog.list_endpoints("j")
    assert listed.spec == declared
    again = await apply_to_catalog(store.catalog, [declaration("j", declared)], T0 + seconds(1))
    assert again.unchanged == ["j", "j/e"]

    refloored = spec("e", jitter_seconds=7.5, catch_up=CatchUp.NONE, catch_up_window_seconds=600.0)
    report = await apply_to_catalog(store.catalog, [declaration("j", refloored)], T0 + seconds(2))

    assert report.updated == ["j/e"]
    assert (await store.catalog.get_endpoint("j/e")).spec.floor_seconds == 1.0


async def test_a_jittered_slot_is_claimed_at_its_call_time_under_its_grid_slot(
    store: Store,
) -> None:
    await apply_to_catalog(
        store.catalog, [declaration("j", spec("e", every=60, jitter_seconds=30.0))], T0
    )
    endpoint = await store.catalog.get_endpoint("j/e")
    call = jittered(endpoint.id, T0, T0 + seconds(60), timedelta(seconds=30), timedelta(seconds=1))
    assert call > T0, "an offset below 1 µs in 30 s: a one-in-thirty-million id"
    assert (endpoint.next_slot, endpoint.next_run_at) == (T0, call)

    assert await store.claims.claim_due(T0, "w1", LEASE_SECONDS, 10) == []
    assert await store.claims.next_due_at() == call
    [claim] = await store.claims.claim_due(call, "w1", LEASE_SECONDS, 10)

    assert (claim.slot_at, claim.call_at, claim.schedule_source) == (
        T0,
        call,
        ScheduleSource.BASELINE,
    )
    [running] = await store.runs.list_runs(endpoint.id)
    assert (running.slot_at, running.status) == (T0, RunStatus.RUNNING)

    run = await finish_one(store.claims, claim, "w1", OK, call + seconds(2))

    assert run.slot_at == T0
    after = await store.catalog.get_endpoint("j/e")
    assert after.last_slot_at == T0
    assert after.next_slot == T0 + seconds(60)
    assert after.next_run_at is not None
    assert T0 + seconds(60) <= after.next_run_at < T0 + seconds(90)


async def test_a_slot_missed_while_down_is_caught_up_once_on_its_grid(store: Store) -> None:
    """Planned at T0, claimed an hour and 30 s later: the latest missed slot runs now."""
    await apply_to_catalog(store.catalog, [declaration("j", spec("e", every=60))], T0)
    down_until = T0 + seconds(3630)

    [claim] = await store.claims.claim_due(down_until, "w1", LEASE_SECONDS, 10)

    assert claim.slot_at == T0 + seconds(3600)
    assert claim.call_at == down_until
    [running] = await store.runs.list_runs(claim.endpoint.id)
    assert running.id == claim.run_id and running.slot_at == T0 + seconds(3600)
    assert claim.endpoint == await store.catalog.get_endpoint("j/e")

    await finish_one(store.claims, claim, "w1", OK, down_until + seconds(1))

    after = await store.catalog.get_endpoint("j/e")
    assert (after.last_slot_at, after.next_run_at) == (T0 + seconds(3600), T0 + seconds(3660))
    assert [run.slot_at for run in await store.runs.list_runs(after.id)] == [T0 + seconds(3600)]


async def test_catch_up_none_waits_for_the_next_slot(store: Store) -> None:
    await apply_to_catalog(
        store.catalog, [declaration("j", spec("e", every=60, catch_up=CatchUp.NONE))], T0
    )

    assert await store.claims.claim_due(T0 + seconds(3630), "w1", LEASE_SECONDS, 10) == []

    endpoint = await store.catalog.get_endpoint("j/e")
    assert (endpoint.next_run_at, endpoint.lease_owner) == (T0 + seconds(3660), None)
    assert await store.runs.list_runs(endpoint.id) == []
    [claim] = await store.claims.claim_due(T0 + seconds(3660), "w1", LEASE_SECONDS, 10)
    assert claim.slot_at == T0 + seconds(3660)


async def test_a_missed_slot_older_than_the_window_is_not_run(store: Store) -> None:
    daily = spec("e", every=86_400, catch_up_window_seconds=3600.0)
    await apply_to_catalog(store.catalog, [declaration("j", daily)], T0)

    assert await store.claims.claim_due(T0 + seconds(7200), "w1", LEASE_SECONDS, 10) == []
    assert (await store.catalog.get_endpoint("j/e")).next_run_at == T0 + seconds(86_400)

    [claim] = await store.claims.claim_due(T0 + seconds(86_400 + 1800), "w1", LEASE_SECONDS, 10)
    assert claim.slot_at == T0 + seconds(86_400)


async def test_a_late_claim_within_one_period_runs_the_planned_slot(store: Store) -> None:
    """Late, but no later slot has passed: nothing is missed but time; the slot stands."""
    await apply_to_catalog(store.catalog, [declaration("j", spec("e", every=60))], T0)

    [claim] = await store.claims.claim_due(T0 + seconds(45), "w1", LEASE_SECONDS, 10)

    assert (claim.slot_at, claim.call_at) == (T0, None)


async def test_a_min_interval_equal_to_the_interval_keeps_the_grid(store: Store) -> None:
    """As etl/fetch: the next slot is a whole minimum after the last one however long the call
    took, so it is planned on the grid, by the baseline."""
    even = spec("e", every=60, min_interval_seconds=60.0)
    # Applied a minute before T0: the min clamp holds its first call until T0.
    await apply_to_catalog(store.catalog, [declaration("j", even)], T0 - seconds(60))
    await finish_one(store.claims, await _claim(store, T0), "w1", OK, T0 + seconds(0.95))

    planned = await store.catalog.get_endpoint("j/e")
    assert (planned.next_run_at, planned.next_slot, planned.next_run_source) == (
        T0 + seconds(60),
        T0 + seconds(60),
        ScheduleSource.BASELINE,
    )


async def test_a_slot_the_min_clamp_pushed_later_keeps_its_catch_up_rule(store: Store) -> None:
    """`min_interval` above the interval: after a run each slot is pushed later, and stays a
    baseline slot: recorded under its grid time, and after downtime `catch_up: none` waits for
    the next slot instead of running a stale one."""
    clamped = spec("e", every=60, min_interval_seconds=70.0, catch_up=CatchUp.NONE)
    # The first call waits the minimum and stands for the slot of the grid before it.
    await apply_to_catalog(store.catalog, [declaration("j", clamped)], T0)
    first = await _claim(store, T0 + seconds(70))
    assert first.slot_at == T0 + seconds(60)
    await finish_one(store.claims, first, "w1", OK, T0 + seconds(70.5))
    planned = await store.catalog.get_endpoint("j/e")
    assert (planned.next_run_at, planned.next_slot, planned.next_run_source) == (
        T0 + seconds(140.5),
        T0 + seconds(120),
        ScheduleSource.CLAMPED_MIN,
    )

    down_until = T0 + seconds(3 * 3600 + 30)
    assert await store.claims.claim_due(down_until, "w1", LEASE_SECONDS, 10) == []

    waiting = await store.catalog.get_endpoint("j/e")
    assert (waiting.next_run_at, waiting.lease_owner) == (T0 + seconds(3 * 3600 + 60), None)
    assert len(await store.runs.list_runs(waiting.id)) == 1


async def test_a_clamped_slot_claimed_on_time_runs_under_its_grid_slot(store: Store) -> None:
    clamped = spec("e", every=60, min_interval_seconds=70.0)
    await apply_to_catalog(store.catalog, [declaration("j", clamped)], T0)
    await finish_one(
        store.claims, await _claim(store, T0 + seconds(70)), "w1", OK, T0 + seconds(70.5)
    )

    claim = await _claim(store, T0 + seconds(140.5))

    assert (claim.slot_at, claim.call_at, claim.schedule_source) == (
        T0 + seconds(120),
        T0 + seconds(140.5),
        ScheduleSource.CLAMPED_MIN,
    )
    await finish_one(store.claims, claim, "w1", OK, T0 + seconds(141))
    after = await store.catalog.get_endpoint("j/e")
    assert (after.last_slot_at, after.next_slot) == (T0 + seconds(120), T0 + seconds(180))


async def _claim(store: Store, now: datetime) -> Claim:
    [claim] = await store.claims.claim_due(now, "w1", LEASE_SECONDS, 10)
    return claim
