"""The five use cases with response rules and without an LLM, end to end: the scheduler worker
and the heuristic planner worker in their own loops against the endpoint simulator on
127.0.0.1, on a fake clock, on SQLite and on PostgreSQL (`tests.support.rule_stories`)."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime, timedelta

import pytest

from cronpilot.adapters.sql import SqlStore
from cronpilot.domain.model import Run, RunStatus, ScheduleSource, SkipKind
from cronpilot.domain.planning.planning import Proposal, ProposalKind, ProposalStatus
from cronpilot.domain.rules.rules import RuleOutcome
from cronpilot.usecases.proposals import ProposalDesk
from tests.support.rule_stories import (
    BILLING,
    ETL,
    FLASH_SALE,
    HEALTH,
    QUEUE,
    START,
    Admin,
    RuleStory,
    tell,
)

Teller = Callable[..., Awaitable[SqlStore]]
_EVERY_2S, _EVERY_5S = timedelta(seconds=2), timedelta(seconds=5)


@pytest.fixture
async def story(sql_url: str) -> AsyncIterator[Teller]:
    told: list[SqlStore] = []

    async def run(case: RuleStory, admin: Admin | None = None) -> SqlStore:
        store = await tell(case, sql_url, admin)
        told.append(store)
        return store

    yield run
    for store in told:
        await store.close()


async def _proposals(store: SqlStore, ref: str) -> list[Proposal]:
    endpoint = await store.catalog.get_endpoint(ref)
    return list(reversed(await store.planner.list_proposals(endpoint_id=endpoint.id)))


async def _runs(store: SqlStore, ref: str) -> list[Run]:
    endpoint = await store.catalog.get_endpoint(ref)
    return list(reversed(await store.runs.list_runs(endpoint.id, limit=500)))


def _at(seconds: float) -> datetime:
    return START + timedelta(seconds=seconds)


async def test_flash_sale_switches_the_investigator_on_and_off(story: Teller) -> None:
    store = await story(FLASH_SALE)

    proposals = await _proposals(store, "flash-sale/investigator")
    assert [(p.kind, p.status, p.proposed_by) for p in proposals] == [
        (ProposalKind.PAUSE, ProposalStatus.APPLIED, "rules"),
        (ProposalKind.RESUME, ProposalStatus.APPLIED, "rules"),
        (ProposalKind.PAUSE, ProposalStatus.APPLIED, "rules"),
    ]
    off, on, off_again = proposals
    assert off.reason == "proposed by rule 2 of flash-sale/investigator: true = true"
    assert on.reason == (
        "proposed by rule 1 of flash-sale/investigator: fraud_score.body.fraud_rate > 0.05 = true"
    )
    # The fraud score crosses 0.05 at its run of 30 s and falls back by its run of 50 s.
    # (The planner may see a run in the second it was made, or the next.)
    assert _at(30) <= on.created_at <= _at(31)
    assert _at(50) <= off_again.created_at <= _at(51)
    runs = await _runs(store, "flash-sale/investigator")
    # Its first slot came before any score; after that it runs only while switched on.
    first, *switched_on = runs
    assert first.slot_at == START
    assert len(switched_on) >= 3
    # Resumed, it runs the slot of its grid just passed, at once (catch-up).
    assert all(on.created_at - _EVERY_5S <= r.slot_at <= off_again.created_at for r in switched_on)
    investigator = await store.catalog.get_endpoint("flash-sale/investigator")
    assert investigator.pause is not None


async def test_etl_transform_runs_only_when_fetch_found_records(story: Teller) -> None:
    store = await story(ETL)

    fetched = {r.trace_id: r for r in await _runs(store, "etl/fetch")}
    transformed = await _runs(store, "etl/transform")
    assert len(transformed) == len(fetched)
    for run in transformed:
        assert run.parent_trace_id is not None
        records = fetched[run.parent_trace_id].body["records"]
        if records > 0:
            assert run.status is RunStatus.SUCCESS
            assert run.body["input_records"] == records
        else:
            assert run.status is RunStatus.SKIPPED
            assert run.error_message is not None
            assert "run_if 'fetch.body.records > 0' is false (fetch.body.records = 0)" in (
                run.error_message
            )
    statuses = {run.status for run in transformed}
    assert statuses == {RunStatus.SUCCESS, RunStatus.SKIPPED}
    assert SkipKind.CONDITION.value == "condition"


async def test_a_regions_failover_runs_while_its_health_check_fails(story: Teller) -> None:
    store = await story(HEALTH)

    checks = await _runs(store, "health/ap")
    failing = [r.slot_at for r in checks if r.status_code == 503]
    # The simulator's ap is down at 40 s (seed 7), and only then among the checks.
    assert failing == [_at(40)]
    proposals = await _proposals(store, "health/ap_failover")
    assert [p.kind for p in proposals] == [
        ProposalKind.PAUSE,
        ProposalKind.RESUME,
        ProposalKind.PAUSE,
    ]
    off, resumed, paused = proposals
    assert resumed.reason == "proposed by rule 1 of health/ap_failover: ap.status >= 500 = true"
    runs = await _runs(store, "health/ap_failover")
    # The first run, and the slot of the very second the first pause is proposed if the
    # scheduler claims it first (both act at that instant of the fake clock).
    before = [r.slot_at for r in runs if r.slot_at <= off.created_at]
    assert before[0] == START and len(before) <= 2, before
    standing_in = runs[len(before) :]
    # From the failed check of 40 s to the next one (the failure backed ap off to 50 s).
    assert _at(40) <= resumed.created_at < paused.created_at <= _at(51)
    assert len(standing_in) >= 3
    assert all(
        resumed.created_at - _EVERY_2S <= r.slot_at <= paused.created_at for r in standing_in
    ), (
        [(r.slot_at - START).total_seconds() for r in runs],
        [(p.kind.value, (p.created_at - START).total_seconds()) for p in proposals],
        [
            (
                (s.started_at - START).total_seconds(),
                [(e.number, e.outcome.value, e.detail) for e in s.rule_evaluations],
            )
            for s in reversed(await store.planner.list_sessions(limit=100))
        ],
    )
    assert all(r.body["serving"] == "failover" for r in standing_in)


async def test_the_queue_processor_follows_the_depth(story: Teller) -> None:
    store = await story(QUEUE)

    proposals = await _proposals(store, "queue/processor")
    assert {p.status for p in proposals} == {ProposalStatus.APPLIED}
    steps = [(p.kind, p.interval_seconds) for p in proposals]
    # The depth bursts every 20 s (608, 380, 154, 7, 606…): fast, baseline, slow, fast…
    assert steps[:4] == [
        (ProposalKind.INTERVAL, 3),
        (ProposalKind.BASELINE, None),
        (ProposalKind.INTERVAL, 60),
        (ProposalKind.INTERVAL, 3),
    ]
    assert "depth.body.pending > 200 = true" in proposals[0].reason
    runs = await _runs(store, "queue/processor")
    fast = [r for r in runs if r.schedule_source is ScheduleSource.HINT_INTERVAL]
    gaps = [(b.slot_at - a.slot_at).total_seconds() for a, b in itertools.pairwise(fast)]
    assert 3 in gaps
    # A rule that keeps holding proposes nothing more: one proposal per change of regime.
    sessions = await store.planner.list_sessions(limit=1000)
    outcomes = [e.outcome for s in sessions for e in s.rule_evaluations]
    assert outcomes.count(RuleOutcome.PROPOSED) == len(proposals)
    # Its passes that find the action in force are counted, not stored (issue 21): a session
    # for each change, and at most one more for each time no rule holds.
    assert len([s for s in sessions if s.planner == "rules"]) <= 2 * len(proposals)


async def test_billing_cleanup_is_held_for_approval_when_the_cost_passes_the_budget(
    story: Teller,
) -> None:
    approved: list[str] = []

    async def admin(desk: ProposalDesk, store: SqlStore, now: datetime) -> None:
        """Approves what waits, a second after it was proposed."""
        for waiting in await store.planner.list_proposals(status=ProposalStatus.PENDING):
            if now - waiting.created_at >= timedelta(seconds=1):
                await desk.approve(waiting.id, "cli:ann@web-1", now)
                approved.append(waiting.id)

    store = await story(BILLING, admin)

    [proposal] = await _proposals(store, "billing/cleanup")
    assert proposal.id in approved
    assert (proposal.kind, proposal.status, proposal.decided_by) == (
        ProposalKind.RUN_NOW,
        ProposalStatus.APPLIED,
        "cli:ann@web-1",
    )
    # The projection passes the budget at the usage run of 45 s (5,250 over 5,000).
    assert _at(45) <= proposal.created_at <= _at(46)
    assert proposal.reason == (
        "proposed by rule 1 of billing/cleanup: usage.body.projected_usd > "
        "usage.body.budget_usd = true"
    )
    [cleanup] = await _runs(store, "billing/cleanup")
    assert cleanup.schedule_source is ScheduleSource.HINT_ONESHOT
    assert proposal.decided_at is not None
    assert proposal.decided_at <= cleanup.slot_at <= proposal.decided_at + timedelta(seconds=1)
