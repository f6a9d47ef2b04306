"""The heuristic planner through the worker, the tools and the proposal path, on every store."""

from __future__ import annotations

from datetime import timedelta

from cronpilot.domain.model import PlannerMode, ScheduleSource
from cronpilot.domain.planning.planning import ProposalKind, ProposalStatus, SessionStatus
from cronpilot.domain.ports import Store
from cronpilot.domain.schedule.quiet import QuietWindow
from cronpilot.planner.heuristic import HeuristicAnalyst
from tests.integration.planner.builders import answer, declare, make_planner, spec
from tests.support.clock import FakeClock

CLAMPED = {"min_interval_seconds": 5.0, "max_interval_seconds": 60.0}


async def test_steady_responses_relax_the_schedule_towards_max(
    store: Store, clock: FakeClock
) -> None:
    await declare(store, clock.now(), spec("a", every=10, **CLAMPED))
    for _ in range(3):
        await answer(store, "j/a", {"pending": 0})
    planner = make_planner(store, HeuristicAnalyst(), clock)

    assert await planner.run_round() is False

    [proposal] = await store.planner.list_proposals()
    assert (proposal.kind, proposal.status, proposal.interval_seconds) == (
        ProposalKind.INTERVAL,
        ProposalStatus.APPLIED,
        20.0,
    )
    assert proposal.reason == (
        "the last 3 responses were identical; relaxing from every 10s to every 20s (max 60s)"
    )
    assert (proposal.proposed_by, proposal.decided_by) == ("heuristic", "auto")
    endpoint = await store.catalog.get_endpoint("j/a")
    assert endpoint.interval_hint is not None
    assert endpoint.interval_hint.interval_seconds == 20.0
    # At least the hourly rate window (decision 0029), not 10 periods of 20 s.
    assert endpoint.interval_hint.expires_at == clock.now() + timedelta(hours=1)
    assert endpoint.next_run_source is ScheduleSource.HINT_INTERVAL
    [session] = await store.planner.list_sessions()
    assert session.status is SessionStatus.SUBMITTED
    assert proposal.session_id == session.id
    assert [call.name for call in session.tool_calls] == [
        "get_response_history",
        "propose_interval",
        "submit_analysis",
    ]
    assert session.tool_errors == 0
    # Nothing new since: the endpoint is not analysed again.
    assert await planner.run_round() is False
    assert len(await store.planner.list_sessions()) == 1


async def test_a_quiet_periods_skipped_run_is_no_failure_to_the_heuristic(
    store: Store, clock: FakeClock
) -> None:
    # Quiet from 12:00:30 for 5 s: the fourth slot is the window's skipped run.
    quiet = (QuietWindow(cron="30 0 12 * * *", duration_seconds=5.0),)
    await declare(store, clock.now(), spec("a", every=10, quiet=quiet, **CLAMPED))
    for _ in range(4):
        await answer(store, "j/a", {"pending": 0})
    assert (await store.catalog.get_endpoint("j/a")).last_slot_at == clock.now() + timedelta(
        seconds=30
    )

    await make_planner(store, HeuristicAnalyst(), clock).run_round()

    [proposal] = await store.planner.list_proposals()
    assert proposal.reason.startswith("the last 3 responses were identical; relaxing")


async def test_changing_responses_tighten_towards_min(store: Store, clock: FakeClock) -> None:
    await declare(store, clock.now(), spec("a", every=20, **CLAMPED))
    await answer(store, "j/a", {"pending": 10})
    await answer(store, "j/a", {"pending": 250})

    await make_planner(store, HeuristicAnalyst(), clock).run_round()

    [proposal] = await store.planner.list_proposals()
    assert proposal.interval_seconds == 10.0
    assert "tightening from every 20s to every 10s (min 5s)" in proposal.reason


async def test_failures_are_left_to_the_backoff(store: Store, clock: FakeClock) -> None:
    await declare(store, clock.now(), spec("a", every=10, **CLAMPED))
    await answer(store, "j/a", {"ok": True})
    await answer(store, "j/a", {"error": "down"}, status=503)

    planner = make_planner(store, HeuristicAnalyst(), clock)
    await planner.run_round()

    assert await store.planner.list_proposals() == []
    # Nothing proposed: the pass is not stored (issue 21), `planner run-once` shows it.
    assert await store.planner.list_sessions() == []
    [session] = await planner.analyse_now("j/a")
    assert session.reasoning == "the endpoint is failing: left to the backoff"
    assert await store.planner.list_sessions() == [session]


async def test_review_mode_holds_the_proposal_for_an_admin(store: Store, clock: FakeClock) -> None:
    await declare(store, clock.now(), spec("a", every=10, **CLAMPED), mode=PlannerMode.REVIEW)
    for _ in range(3):
        await answer(store, "j/a", [1, 2])
    planner = make_planner(store, HeuristicAnalyst(), clock)
    await planner.run_round()

    [pending] = await store.planner.list_proposals(status=ProposalStatus.PENDING)
    assert (await store.catalog.get_endpoint("j/a")).interval_hint is None
    assert pending.expires_at == clock.now() + timedelta(hours=1)

    clock.advance(30)
    approved = await planner.desk.approve(pending.id, "ann@ops", clock.now())

    assert (approved.status, approved.decided_by, approved.decided_at) == (
        ProposalStatus.APPLIED,
        "ann@ops",
        clock.now(),
    )
    hint = (await store.catalog.get_endpoint("j/a")).interval_hint
    assert hint is not None
    assert (hint.interval_seconds, hint.expires_at) == (20.0, clock.now() + timedelta(hours=1))


async def test_off_mode_is_never_analysed(store: Store, clock: FakeClock) -> None:
    await declare(store, clock.now(), spec("a", every=10, **CLAMPED), mode=PlannerMode.OFF)
    for _ in range(3):
        await answer(store, "j/a", {"same": True})

    await make_planner(store, HeuristicAnalyst(), clock).run_round()

    assert await store.planner.list_sessions() == []


async def test_the_worker_expires_proposals_nobody_decided(store: Store, clock: FakeClock) -> None:
    await declare(store, clock.now(), spec("a", every=10, **CLAMPED), mode=PlannerMode.REVIEW)
    for _ in range(3):
        await answer(store, "j/a", {"same": True})
    planner = make_planner(store, HeuristicAnalyst(), clock)
    await planner.run_round()

    clock.advance(3600)
    await planner.run_round()

    [expired] = await store.planner.list_proposals()
    assert (expired.status, expired.decided_by) == (ProposalStatus.EXPIRED, "planner")
    assert (await store.catalog.get_endpoint("j/a")).interval_hint is None
