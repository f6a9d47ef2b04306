"""Retention on every store (memory, SQLite, PostgreSQL), driven by housekeeping on a fake
clock (issue 21, item 3): each table loses the rows past its window and keeps the recent ones,
the pending proposals and the notifications still to deliver; a prune deletes at most its
batch, oldest first."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from cronpilot.domain.access.audit import AuditEntry, audit_entry
from cronpilot.domain.alerts.alerts import AlertEvent, Notification, NotificationStatus
from cronpilot.domain.graph.dependencies import with_dependants
from cronpilot.domain.model import Finish, Response, RunTrigger, Schedule, new_id
from cronpilot.domain.planning.approvals import Approval, ApprovalState
from cronpilot.domain.planning.planning import (
    AnalysisOutcome,
    AnalysisSession,
    Proposal,
    ProposalKind,
    ProposalStatus,
    SessionStatus,
)
from cronpilot.domain.ports import Store
from cronpilot.domain.rules.rule_firing import RULES_PLANNER
from cronpilot.domain.runs.retention import Retention
from cronpilot.domain.runs.transitions import queued_run
from cronpilot.scheduler.housekeeping import Housekeeping
from cronpilot.usecases.approvals import ApprovalDesk
from cronpilot.usecases.declarations import apply_to_catalog
from tests.contract.builders import (
    LEASE_SECONDS,
    OK,
    T0,
    add_endpoint,
    claim_one,
    declaration,
    spec,
)
from tests.support.clock import FakeClock
from tests.support.finishing import finish_one, record_one
from tests.support.settings import retention_for_tests

DAY = timedelta(days=1)
RETENTION = retention_for_tests(
    sessions=14 * DAY,
    rule_evaluations=7 * DAY,
    proposals=90 * DAY,
    notifications=30 * DAY,
    approvals=30 * DAY,
)


def _housekeeping(store: Store, clock: FakeClock, retention: Retention = RETENTION) -> Housekeeping:
    return Housekeeping(
        store,
        clock,
        reaper_interval_seconds=10,
        retention_runs=5,
        prune_interval_seconds=600,
        worker_stale_seconds=60,
        retention=retention,
        approvals=ApprovalDesk(store.unit_of_work, store.reading, None),
    )


async def _store_session(store: Store, endpoint_id: str, planner: str, at: datetime) -> str:
    claim = await store.planner.claim_endpoint(endpoint_id, at, "p1", 60)
    session = AnalysisSession(
        id=new_id(),
        endpoint_id=endpoint_id,
        job_id=claim.endpoint.job_id,
        planner=planner,
        started_at=at,
        finished_at=at,
        status=SessionStatus.SUBMITTED,
    )
    outcome = AnalysisOutcome(None, False, at + timedelta(minutes=5), failed=False)
    await store.planner.finish_analysis(claim, "p1", session, outcome, at)
    return session.id


def _proposal(endpoint_id: str, job_id: str, at: datetime, status: ProposalStatus) -> Proposal:
    return Proposal(
        id=new_id(),
        endpoint_id=endpoint_id,
        job_id=job_id,
        kind=ProposalKind.INTERVAL,
        reason="steady",
        proposed_by="heuristic",
        created_at=at,
        status=status,
        interval_seconds=30,
        expires_at=at + timedelta(hours=1),
    )


def _notification(
    endpoint_id: str, job_id: str, at: datetime, status: NotificationStatus
) -> Notification:
    return Notification(
        id=new_id(),
        endpoint_id=endpoint_id,
        job_id=job_id,
        event=AlertEvent.FAILING,
        url="https://hooks.example.com/a",
        payload={"event": "failing"},
        created_at=at,
        next_attempt_at=at,
        status=status,
    )


async def test_sessions_past_their_window_go_rules_sessions_sooner(store: Store) -> None:
    clock = FakeClock(T0)
    endpoint_id = await add_endpoint(store, "j", "e", T0)
    old_analysis = await _store_session(store, endpoint_id, "heuristic", T0 - 15 * DAY)
    recent_analysis = await _store_session(store, endpoint_id, "llm:m", T0 - 13 * DAY)
    old_rules = await _store_session(store, endpoint_id, RULES_PLANNER, T0 - 8 * DAY)
    recent_rules = await _store_session(store, endpoint_id, RULES_PLANNER, T0 - 6 * DAY)

    gone = await _housekeeping(store, clock).prune_records()

    assert gone["sessions"] == 2
    kept = {s.id for s in await store.planner.list_sessions()}
    assert kept == {recent_analysis, recent_rules}
    assert {old_analysis, old_rules}.isdisjoint(kept)
    # Idempotent: a second worker pruning the same store finds nothing left.
    assert (await _housekeeping(store, clock).prune_records())["sessions"] == 0


async def test_decided_proposals_go_pending_ones_stay(store: Store) -> None:
    clock = FakeClock(T0)
    endpoint_id = await add_endpoint(store, "j", "e", T0)
    job_id = (await store.catalog.get_endpoint(endpoint_id)).job_id
    old = T0 - 91 * DAY
    made = {
        status: _proposal(endpoint_id, job_id, old, status)
        for status in (ProposalStatus.APPLIED, ProposalStatus.REJECTED, ProposalStatus.PENDING)
    }
    recent = _proposal(endpoint_id, job_id, T0 - 89 * DAY, ProposalStatus.APPLIED)
    for proposal in (*made.values(), recent):
        await store.planner.add_proposal(proposal)

    gone = await _housekeeping(store, clock).prune_records()

    assert gone["proposals"] == 2
    kept = {p.id for p in await store.planner.list_proposals()}
    assert kept == {made[ProposalStatus.PENDING].id, recent.id}


async def test_delivered_notifications_go_undelivered_ones_stay(store: Store) -> None:
    clock = FakeClock(T0)
    endpoint_id = await add_endpoint(store, "j", "e", T0)
    job_id = (await store.catalog.get_endpoint(endpoint_id)).job_id
    old = T0 - 31 * DAY
    raised = {
        status: _notification(endpoint_id, job_id, old, status) for status in NotificationStatus
    }
    recent = _notification(endpoint_id, job_id, T0 - 29 * DAY, NotificationStatus.DELIVERED)
    carrier = _proposal(endpoint_id, job_id, T0, ProposalStatus.PENDING)
    await store.planner.add_proposal(carrier, [*raised.values(), recent])

    gone = await _housekeeping(store, clock).prune_records()

    assert gone["notifications"] == 3  # delivered, failed and held: their delivery has ended
    kept = {n.id for n in await store.notifications.list_notifications()}
    assert kept == {raised[NotificationStatus.PENDING].id, recent.id}


async def test_audit_entries_are_kept_a_year(store: Store) -> None:
    clock = FakeClock(T0)
    old = audit_entry("cli:ann@host", "pause", "j/e", "for a deploy", T0 - 366 * DAY)
    recent = audit_entry("cli:ann@host", "resume", "j/e", "", T0 - 364 * DAY)
    for entry in (old, recent):
        await store.access.record(entry)

    gone = await _housekeeping(store, clock).prune_records()

    assert gone["audit"] == 1
    assert [e.id for e in await store.access.list_audit()] == [recent.id]


async def test_a_prune_deletes_at_most_its_batch_oldest_first(store: Store) -> None:
    entries = [
        audit_entry("cli:ann@host", "pause", "j/e", "", T0 - timedelta(minutes=n)) for n in range(5)
    ]
    for entry in entries:
        await store.access.record(entry)

    assert await store.access.prune_audit(T0, limit=2) == 2

    left: list[AuditEntry] = await store.access.list_audit()
    assert [e.id for e in left] == [e.id for e in entries[:3]]
    assert await store.access.prune_audit(T0, limit=0) == 0
    # Nothing before the first entry: nothing goes.
    assert await store.access.prune_audit(entries[-1].at, limit=10) == 0


async def _approval_asked(store: Store, at: datetime) -> Approval:
    """billing/usage answers at `at`; its gated dependant asks for an approval."""
    claim = await claim_one(store, at)
    ok = Response(status_code=200, body={"spend": 1}, body_hash="h")
    recorded = await record_one(store.claims, Finish(claim, "w1", ok, at, LEASE_SECONDS))
    [approval] = recorded.approvals
    return approval


async def test_decided_approvals_go_pending_ones_stay(store: Store) -> None:
    gated = spec(
        "cleanup", schedule=Schedule(), depends_on=("usage",), approval_timeout_seconds=600
    )
    await apply_to_catalog(
        store.catalog, [declaration("billing", *with_dependants([spec("usage"), gated]))], T0
    )
    asked = []
    for minute in range(3):
        at = T0 + timedelta(minutes=minute)
        asked.append(await _approval_asked(store, at))
        if minute < 2:
            decided = ApprovalState.REJECTED
            await store.approvals.decide(asked[-1].id, decided, "cli:ann@host", None, at)
    clock = FakeClock(T0 + timedelta(days=30, seconds=30))

    gone = await _housekeeping(store, clock).prune_records()

    assert gone["approvals"] == 1
    kept = {a.id: a.state for a in await store.approvals.list_approvals()}
    assert kept == {asked[1].id: ApprovalState.REJECTED, asked[2].id: ApprovalState.PENDING}


async def test_finished_runs_past_their_window_go_queued_ones_stay(store: Store) -> None:
    """By slot: the runs of days past `retention_runs_days` go (on PostgreSQL from the DEFAULT
    partition here, T0's days having none), the recent ones and a queued one stay."""
    endpoint_id = await add_endpoint(store, "j", "e", T0 - 12 * DAY, every=86_400)
    ran = []
    for day in range(12, 0, -1):
        claim = await claim_one(store, T0 - day * DAY)
        ran.append(await finish_one(store.claims, claim, "w1", OK, T0 - day * DAY))
    retention = replace(RETENTION, runs=10 * DAY)
    clock = FakeClock(T0)
    old_slot = T0 - 30 * DAY
    endpoint = await store.catalog.get_endpoint("j/e")
    asked = queued_run(
        endpoint, RunTrigger.BACKFILL, slot_at=old_slot, due_at=T0, requested_by="a", now=T0
    )
    (queued,) = await store.claims.enqueue([asked])

    gone = await _housekeeping(store, clock, retention).prune_records()

    assert gone["runs"] == 2
    kept = {run.id for run in await store.runs.list_runs(endpoint_id, limit=100)}
    assert kept == {run.id for run in ran[2:]} | {queued.id}
    assert (await _housekeeping(store, clock, retention).prune_records())["runs"] == 0
