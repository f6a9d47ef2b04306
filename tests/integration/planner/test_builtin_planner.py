"""The built-in planner (the freshness analyst, decision 0058) through the worker, the tools
and the proposal path, on every store: it moves a job's calls from an endpoint that never
changes to one that changes, within the clamps; failures and Retry-After are left to the
backoff; review mode holds, off mode is never analysed, undecided proposals expire."""

from __future__ import annotations

from datetime import timedelta

from cronpilot.domain.model import EndpointSpec, Job, PlannerMode, Schedule, ScheduleSource
from cronpilot.domain.planning.freshness_planner import STEP_TTL_SECONDS
from cronpilot.domain.planning.planning import (
    ProposalDraft,
    ProposalKind,
    ProposalStatus,
    SessionStatus,
)
from cronpilot.domain.ports import JobDeclaration, Store
from cronpilot.domain.schedule.quiet import QuietWindow
from cronpilot.planner.freshness import FreshnessAnalyst
from cronpilot.planner.worker import PlannerWorker
from cronpilot.usecases.declarations import apply_to_catalog
from cronpilot.usecases.proposals import Proposer
from tests.integration.planner.builders import T0, answer, declare, make_planner, spec
from tests.support.clock import FakeClock
from tests.support.settings import limits_for_tests

CLAMPED = {"min_interval_seconds": 5.0, "max_interval_seconds": 3600.0}


async def _silent_and_busy(
    store: Store,
    clock: FakeClock,
    *,
    mode: PlannerMode = PlannerMode.AUTO,
    silent: EndpointSpec | None = None,
    calls: int = 12,
) -> PlannerWorker:
    """Job `j`: `silent` answers alike, `busy` changes on every other call, both every 20 s
    and answered `calls` times; and a built-in planner."""
    await declare(
        store,
        clock.now(),
        silent or spec("silent", every=20, **CLAMPED),
        spec("busy", every=20, **CLAMPED),
        mode=mode,
    )
    for n in range(calls):
        await answer(store, "j/silent", {"pending": 0})
        await answer(store, "j/busy", {"pending": n // 2})
    clock.advance(240)
    limits = limits_for_tests(max_changes_per_hour=100)
    return make_planner(store, FreshnessAnalyst(), clock, limits=limits)


async def test_an_admins_shorter_hint_limit_caps_the_step_rather_than_refuse_it(
    store: Store, clock: FakeClock
) -> None:
    """`CRONPILOT_PLANNER_MAX_HINT_TTL_SECONDS` below the planner's day: its steps ask for no
    more than the limit, which the guardrails would refuse, and are applied."""
    await _silent_and_busy(store, clock)
    limits = limits_for_tests(max_changes_per_hour=100, max_hint_ttl_seconds=3600)
    planner = make_planner(store, FreshnessAnalyst(), clock, limits=limits)

    await planner.analyse_now("j/silent")

    [proposal] = await store.planner.list_proposals()
    assert (proposal.status, proposal.interval_seconds) == (ProposalStatus.APPLIED, 28.0)
    endpoint = await store.catalog.get_endpoint("j/silent")
    assert endpoint.interval_hint is not None
    assert endpoint.interval_hint.expires_at == clock.now() + timedelta(hours=1)


async def test_a_silent_endpoint_gives_its_calls_up_in_damped_steps(
    store: Store, clock: FakeClock
) -> None:
    planner = await _silent_and_busy(store, clock)

    await planner.analyse_now("j/silent")

    [proposal] = await store.planner.list_proposals()
    assert (proposal.kind, proposal.status, proposal.interval_seconds) == (
        ProposalKind.INTERVAL,
        ProposalStatus.APPLIED,
        28.0,
    )
    assert proposal.reason.startswith(
        "no change seen (0 changes seen in 11 calls); every 20 s keeps the copy fresh 100% "
        "of the time; every 28 s would keep it fresh 100% (a damped step towards every "
    )
    assert (proposal.proposed_by, proposal.decided_by) == ("freshness", "auto")
    endpoint = await store.catalog.get_endpoint("j/silent")
    assert endpoint.interval_hint is not None
    assert endpoint.interval_hint.interval_seconds == 28.0
    # A day: longer than the planner ever waits between two looks (`STEP_TTL_SECONDS`).
    assert endpoint.interval_hint.expires_at == clock.now() + timedelta(seconds=STEP_TTL_SECONDS)
    assert endpoint.next_run_source is ScheduleSource.HINT_INTERVAL
    [session] = await store.planner.list_sessions()
    assert session.status is SessionStatus.SUBMITTED
    assert proposal.session_id == session.id
    assert [call.name for call in session.tool_calls] == ["propose_interval", "submit_analysis"]
    assert session.tool_errors == 0


async def test_the_hours_last_changes_are_kept_for_a_step_back(
    store: Store, clock: FakeClock
) -> None:
    """Four changes applied to the silent endpoint this hour, of the default six: the planner
    does not climb with the last two, which a step back may need."""
    await _silent_and_busy(store, clock)
    silent = await store.catalog.get_endpoint("j/silent")
    planner = make_planner(store, FreshnessAnalyst(), clock, limits=limits_for_tests())
    by = Proposer("llm:test", PlannerMode.AUTO, "s1")
    for seconds in (21.0, 22.0, 23.0, 24.0):
        draft = ProposalDraft(ProposalKind.INTERVAL, "by hand", seconds, ttl_seconds=3600)
        made = await planner.desk.propose(draft, silent.id, by, clock.now())
        assert made.status is ProposalStatus.APPLIED, made.outcome
        clock.advance(121)

    [session] = await planner.analyse_now("j/silent")

    assert len(await store.planner.list_proposals(endpoint_id=silent.id)) == 4
    assert session.reasoning.endswith("but the hour's last 2 change(s) are kept for a step back")


async def test_a_changing_endpoint_is_called_more_often(store: Store, clock: FakeClock) -> None:
    planner = await _silent_and_busy(store, clock)

    await planner.analyse_now("j/busy")

    [proposal] = await store.planner.list_proposals()
    # Whatever its rate, the silent sibling leaves it almost all the job's calls: every rate
    # the estimate allows wants it called every ~10 s, so one step goes there (not x0.6).
    assert proposal.interval_seconds is not None
    assert 10.0 <= proposal.interval_seconds <= 10.1
    assert "(one step to the best split of 360/h" in proposal.reason
    assert "would keep it fresh" in proposal.reason


async def test_without_clamps_an_endpoint_keeps_its_schedule(
    store: Store, clock: FakeClock
) -> None:
    """The clamps are the admin's permission to move an endpoint."""
    planner = await _silent_and_busy(store, clock, silent=spec("silent", every=20))

    [session] = await planner.analyse_now("j/silent")

    assert await store.planner.list_proposals() == []
    assert "already at its share of the calls" in session.reasoning


async def test_a_quiet_periods_skipped_run_is_no_failure(store: Store, clock: FakeClock) -> None:
    # Quiet from 12:00:30 for 5 s: a slot of the silent endpoint is the window's skipped run.
    quiet = (QuietWindow(cron="30 0 12 * * *", duration_seconds=5.0),)
    silent = spec("silent", every=20, quiet=quiet, **CLAMPED)
    planner = await _silent_and_busy(store, clock, silent=silent)

    await planner.analyse_now("j/silent")

    [proposal] = await store.planner.list_proposals()
    assert proposal.reason.startswith("no change seen")


async def test_failures_are_left_to_the_backoff(store: Store, clock: FakeClock) -> None:
    planner = await _silent_and_busy(store, clock)
    await answer(store, "j/silent", {"error": "down"}, status=503)

    [session] = await planner.analyse_now("j/silent")

    assert await store.planner.list_proposals() == []
    assert session.reasoning == (
        "the endpoint is failing or asked to wait (Retry-After): left to the backoff"
    )


async def test_review_mode_holds_the_proposal_for_an_admin(store: Store, clock: FakeClock) -> None:
    planner = await _silent_and_busy(store, clock, mode=PlannerMode.REVIEW)
    await planner.analyse_now("j/silent")

    [pending] = await store.planner.list_proposals(status=ProposalStatus.PENDING)
    assert (await store.catalog.get_endpoint("j/silent")).interval_hint is None
    assert pending.expires_at == clock.now() + timedelta(hours=1)

    clock.advance(30)
    approved = await planner.desk.approve(pending.id, "ann@ops", clock.now())

    assert (approved.status, approved.decided_by, approved.decided_at) == (
        ProposalStatus.APPLIED,
        "ann@ops",
        clock.now(),
    )
    hint = (await store.catalog.get_endpoint("j/silent")).interval_hint
    assert hint is not None
    day = timedelta(seconds=STEP_TTL_SECONDS)
    assert (hint.interval_seconds, hint.expires_at) == (28.0, clock.now() + day)


async def test_off_mode_is_never_analysed(store: Store, clock: FakeClock) -> None:
    planner = await _silent_and_busy(store, clock, mode=PlannerMode.OFF)

    await planner.run_round()

    assert await store.planner.list_sessions() == []


async def test_the_worker_expires_proposals_nobody_decided(store: Store, clock: FakeClock) -> None:
    planner = await _silent_and_busy(store, clock, mode=PlannerMode.REVIEW)
    await planner.analyse_now("j/silent")

    clock.advance(3600)
    await planner.run_round()

    expired = [p for p in await store.planner.list_proposals() if p.interval_seconds == 28.0]
    assert [(p.status, p.decided_by) for p in expired] == [(ProposalStatus.EXPIRED, "planner")]
    assert (await store.catalog.get_endpoint("j/silent")).interval_hint is None


async def test_a_jobs_budget_is_what_the_planner_splits(store: Store, clock: FakeClock) -> None:
    """Alone in its job an endpoint keeps its schedule, which is the whole budget; with
    `budget: 60/h` the planner moves it towards a call a minute."""
    job = Job("j", planner_mode=PlannerMode.AUTO, budget="60/h")
    await apply_to_catalog(
        store.catalog, [JobDeclaration(job, [spec("lone", every=20, **CLAMPED)])], T0
    )
    for _ in range(12):
        await answer(store, "j/lone", {"pending": 0})
    clock.advance(240)
    planner = make_planner(store, FreshnessAnalyst(), clock)

    await planner.analyse_now("j/lone")

    [proposal] = await store.planner.list_proposals()
    assert proposal.interval_seconds == 28.0
    assert "of 60/h across the job's 1 endpoints" in proposal.reason


async def test_a_dag_dependant_has_no_schedule_of_its_own_to_tune(
    store: Store, clock: FakeClock
) -> None:
    await declare(
        store,
        clock.now(),
        spec("fetch", every=20, **CLAMPED),
        spec("load", schedule=Schedule(), depends_on=("fetch",)),
    )
    planner = make_planner(store, FreshnessAnalyst(), clock)

    [session] = await planner.analyse_now("j/load")

    assert session.reasoning.startswith("runs after its upstreams (depends_on)")
    assert await store.planner.list_proposals() == []
