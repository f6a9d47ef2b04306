"""Quiet windows in every store (memory, SQLite, PostgreSQL): the declaration round-trips, the
first slot of a window is claimed as the window's skipped run and recorded `skipped` without a
call, the schedule resumes at the window's end, and a DAG root's skipped run skips its
dependants."""

from __future__ import annotations

from datetime import timedelta

from cronpilot.domain.graph.dependencies import with_dependants
from cronpilot.domain.model import Finish, RunStatus, Schedule, ScheduleSource, SkipKind
from cronpilot.domain.ports import Store
from cronpilot.domain.schedule.quiet import QuietWindow, skipped_quietly
from cronpilot.usecases.declarations import apply_to_catalog
from tests.contract.builders import LEASE_SECONDS, OK, T0, declaration, seconds, spec
from tests.support.finishing import finish_one, record_one

# T0 is Tuesday 1 January 2030, 12:00 UTC: quiet from 12:00 to 13:00 every day.
LUNCH = (QuietWindow(hours=(12 * 60, 13 * 60)), QuietWindow(dates=(T0.date(),), hours=(0, 60)))


async def test_quiet_windows_round_trip(store: Store) -> None:
    declared = spec("e", quiet=LUNCH)
    await apply_to_catalog(store.catalog, [declaration("j", declared)], T0 - seconds(60))

    assert (await store.catalog.get_endpoint("j/e")).spec == declared
    again = await apply_to_catalog(store.catalog, [declaration("j", declared)], T0)
    assert again.unchanged == ["j", "j/e"]


async def test_a_windows_first_slot_is_skipped_without_a_call_and_the_rest_wait(
    store: Store,
) -> None:
    await apply_to_catalog(store.catalog, [declaration("j", spec("e", every=600, quiet=LUNCH))], T0)
    endpoint = await store.catalog.get_endpoint("j/e")
    assert (endpoint.next_run_at, endpoint.next_run_source) == (T0, ScheduleSource.QUIET)

    [claim] = await store.claims.claim_due(T0, "w1", LEASE_SECONDS, 10)
    assert claim.schedule_source is ScheduleSource.QUIET
    skipped = skipped_quietly(claim.endpoint.spec.quiet, claim.slot_at, T0)
    run = await finish_one(store.claims, claim, "w1", skipped, T0)

    assert run.status is RunStatus.SKIPPED
    assert run.error_message == "skipped: quiet period until 2030-01-01T13:00:00+00:00"
    after = await store.catalog.get_endpoint("j/e")
    assert (after.next_run_at, after.next_run_source) == (T0 + timedelta(hours=1), "baseline")
    assert after.failure_count == 0

    [claim] = await store.claims.claim_due(T0 + timedelta(hours=1), "w1", LEASE_SECONDS, 10)
    assert claim.schedule_source is ScheduleSource.BASELINE
    await finish_one(store.claims, claim, "w1", OK, T0 + timedelta(hours=1, seconds=1))
    statuses = [r.status for r in await store.runs.list_runs(endpoint.id)]
    assert sorted(statuses) == [RunStatus.SKIPPED, RunStatus.SUCCESS]


async def test_a_quiet_roots_skipped_run_skips_its_dependants(store: Store) -> None:
    dependant = spec("load", depends_on=("fetch",), schedule=Schedule())
    root = spec("fetch", every=600, quiet=LUNCH)
    await apply_to_catalog(
        store.catalog, [declaration("etl", *with_dependants([root, dependant]))], T0
    )
    [claim] = await store.claims.claim_due(T0, "w1", LEASE_SECONDS, 10)

    skipped = skipped_quietly(LUNCH, claim.slot_at, T0)
    recorded = await record_one(store.claims, Finish(claim, "w1", skipped, T0, LEASE_SECONDS))

    assert (recorded.run.status, recorded.started) == (RunStatus.SKIPPED, [])
    assert recorded.skips == (SkipKind.UPSTREAM_SKIPPED,)
    load = await store.catalog.get_endpoint("etl/load")
    [skipped_load] = await store.runs.list_runs(load.id)
    assert skipped_load.error_message == "skipped: upstream 'fetch' was skipped"
