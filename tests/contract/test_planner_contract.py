"""PlannerRepository contract, run on every store (memory, SQLite, PostgreSQL)."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import datetime

import pytest

from cronpilot.domain.errors import (
    AnalysisBusy,
    EndpointNotFound,
    LeaseLost,
    ProposalNotFound,
    ProposalNotPending,
    SessionNotFound,
)
from cronpilot.domain.graph.graph import EdgeSighting, EdgeSource, EdgeType
from cronpilot.domain.graph.outputs import OutputSchema
from cronpilot.domain.graph.schema_inference import merge_document
from cronpilot.domain.model import Job, Pause, PlannerMode, Response, new_id
from cronpilot.domain.planning.planning import (
    AnalysisClaim,
    AnalysisOutcome,
    AnalysisSession,
    Proposal,
    ProposalKind,
    ProposalStatus,
    SessionStatus,
    ToolCallRecord,
)
from cronpilot.domain.ports import JobDeclaration, Store
from cronpilot.planner.analysis_context import read_analysis_context
from cronpilot.usecases.declarations import apply_to_catalog
from tests.contract.builders import OK, T0, run_once, seconds, spec
from tests.support.finishing import finish_one
from tests.support.scheduling import set_pause

FAILED = Response(status_code=503, body={"down": True})


async def _declare(store: Store, mode: PlannerMode, *names: str, job: str = "j") -> None:
    specs = [spec(name) for name in names]
    await apply_to_catalog(store.catalog, [JobDeclaration(Job(job, planner_mode=mode), specs)], T0)


def _session(claim: AnalysisClaim, at: datetime, **fields: object) -> AnalysisSession:
    base = AnalysisSession(
        id=new_id(),
        endpoint_id=claim.endpoint.id,
        job_id=claim.endpoint.job_id,
        planner="heuristic",
        started_at=at,
        finished_at=at + seconds(1),
        status=SessionStatus.SUBMITTED,
        reasoning="steady",
        confidence=0.8,
        next_analysis_at=at + seconds(300),
        prompt_tokens=120,
        completion_tokens=30,
        tool_errors=1,
        tool_calls=[
            ToolCallRecord(1, "get_latest_response", {"fields": ["a.b"]}, 2.5, 40),
            ToolCallRecord(2, "nope", {}, 0.1, 30, error="unknown tool 'nope'"),
            ToolCallRecord(
                3, "pause_until", {"reason": "r"}, 1.5, 60, outcome="held for review as proposal p"
            ),
        ],
    )
    return replace(base, **fields)  # type: ignore[arg-type]


async def _finish(
    store: Store, claim: AnalysisClaim, at: datetime, look_again: float = 300, **fields: object
) -> AnalysisSession:
    session = _session(claim, at, **fields)
    outcome = AnalysisOutcome(
        seen_slot_at=at,
        seen_failing=claim.endpoint.failure_count > 0,
        next_analysis_at=at + seconds(look_again),
        failed=session.status is SessionStatus.FAILED,
    )
    await store.planner.finish_analysis(claim, "p1", session, outcome, at)
    return session


async def test_endpoints_with_new_runs_are_claimed_once_and_not_when_off(store: Store) -> None:
    await _declare(store, PlannerMode.REVIEW, "a")
    await _declare(store, PlannerMode.OFF, "quiet", job="off")
    assert await store.planner.claim_analyses(T0, "p1", 60, 10) == []

    await run_once(store, T0)
    await run_once(store, T0)
    [claim] = await store.planner.claim_analyses(T0 + seconds(1), "p1", 60, 10)

    assert (claim.endpoint.ref, claim.mode, claim.llm_failures) == ("j/a", PlannerMode.REVIEW, 0)
    assert claim.lease_until == T0 + seconds(61)
    assert await store.planner.claim_analyses(T0 + seconds(2), "p2", 60, 10) == []
    again = await store.planner.claim_analyses(T0 + seconds(62), "p2", 60, 10)
    assert [c.endpoint.ref for c in again] == ["j/a"]


async def test_endpoint_mode_overrides_the_job_mode(store: Store) -> None:
    specs = [spec("on", planner_mode=PlannerMode.AUTO), spec("inherits")]
    await apply_to_catalog(
        store.catalog, [JobDeclaration(Job("j", planner_mode=PlannerMode.OFF), specs)], T0
    )
    await run_once(store, T0)
    await run_once(store, T0)

    claims = await store.planner.claim_analyses(T0, "p1", 60, 10)

    assert [(c.endpoint.name, c.mode) for c in claims] == [("on", PlannerMode.AUTO)]


async def test_finish_waits_for_new_runs_and_the_next_analysis_time(store: Store) -> None:
    await _declare(store, PlannerMode.AUTO, "a")
    await run_once(store, T0)
    [claim] = await store.planner.claim_analyses(T0, "p1", 60, 10)
    session = await _finish(store, claim, T0, look_again=120)

    assert await store.planner.get_session(session.id) == session
    assert await store.planner.claim_analyses(T0 + seconds(200), "p1", 60, 10) == []
    await run_once(store, T0 + seconds(60))
    assert await store.planner.claim_analyses(T0 + seconds(61), "p1", 60, 10) == []
    assert len(await store.planner.claim_analyses(T0 + seconds(120), "p1", 60, 10)) == 1


async def test_a_changed_failure_state_is_picked_at_once(store: Store) -> None:
    await _declare(store, PlannerMode.AUTO, "a")
    await run_once(store, T0)
    [claim] = await store.planner.claim_analyses(T0, "p1", 60, 10)
    await _finish(store, claim, T0, look_again=3600)

    await run_once(store, T0 + seconds(60), FAILED)

    [again] = await store.planner.claim_analyses(T0 + seconds(61), "p1", 60, 10)
    assert again.endpoint.failure_count == 1


async def test_failed_sessions_count_towards_the_backoff(store: Store) -> None:
    await _declare(store, PlannerMode.AUTO, "a")
    await run_once(store, T0)
    [claim] = await store.planner.claim_analyses(T0, "p1", 60, 10)
    await _finish(store, claim, T0, look_again=30, status=SessionStatus.FAILED, error="down")
    await run_once(store, T0 + seconds(60), FAILED)

    assert await store.planner.claim_analyses(T0 + seconds(20), "p1", 60, 10) == []
    [again] = await store.planner.claim_analyses(T0 + seconds(30), "p1", 60, 10)
    assert again.llm_failures == 1


async def test_finish_without_the_lease_writes_nothing(store: Store) -> None:
    await _declare(store, PlannerMode.AUTO, "a")
    await run_once(store, T0)
    [claim] = await store.planner.claim_analyses(T0, "p1", 60, 10)
    await store.planner.claim_endpoint(claim.endpoint.id, T0 + seconds(61), "p2", 60)

    with pytest.raises(LeaseLost):
        await _finish(store, claim, T0 + seconds(62))
    assert await store.planner.list_sessions() == []


async def test_claim_endpoint_refuses_while_another_worker_analyses(store: Store) -> None:
    await _declare(store, PlannerMode.OFF, "a")
    endpoint = await store.catalog.get_endpoint("j/a")
    claim = await store.planner.claim_endpoint(endpoint.id, T0, "p1", 60)
    assert (claim.mode, claim.lease_until) == (PlannerMode.OFF, T0 + seconds(60))

    with pytest.raises(AnalysisBusy):
        await store.planner.claim_endpoint(endpoint.id, T0 + seconds(1), "p2", 60)


async def test_claim_endpoint_takes_an_id_or_a_job_and_name(store: Store) -> None:
    await _declare(store, PlannerMode.REVIEW, "a")
    await _declare(store, PlannerMode.REVIEW, "a", job="k")

    claim = await store.planner.claim_endpoint("k/a", T0, "p1", 60)

    assert claim.endpoint == await store.catalog.get_endpoint("k/a")
    with pytest.raises(AnalysisBusy):
        await store.planner.claim_endpoint(claim.endpoint.id, T0, "p2", 60)
    for unknown in ("k/b", "nope/a", new_id()):
        with pytest.raises(EndpointNotFound):
            await store.planner.claim_endpoint(unknown, T0, "p1", 60)


async def test_the_analysis_context_holds_what_an_analysis_reads_first(store: Store) -> None:
    await apply_to_catalog(
        store.catalog,
        [
            JobDeclaration(Job("j", "order feeds", PlannerMode.REVIEW), [spec("b"), spec("a")]),
            JobDeclaration(Job("k", planner_mode=PlannerMode.REVIEW), [spec("c")]),
        ],
        T0,
    )
    for claim in await store.claims.claim_due(T0, "w1", 60, 10):
        await finish_one(store.claims, claim, "w1", OK, T0)
    # At T0+60 every endpoint runs again; only k's run ends: j's newest runs are running.
    for claim in await store.claims.claim_due(T0 + seconds(60), "w1", 60, 10):
        if claim.endpoint.job_name == "k":
            await finish_one(store.claims, claim, "w1", OK, T0 + seconds(60))
    a = await store.catalog.get_endpoint("j/a")
    schema = OutputSchema(a.id)
    merge_document(schema.root, {"batch_id": "b1"})
    await store.schemas.save_output_schema(schema, [], T0, rebuilt=False)
    await store.graph.record(
        [
            EdgeSighting("j/a", "j/b", EdgeType.SEQUENCE, EdgeSource.INFERRED, True),
            EdgeSighting("k/c", "k/c", EdgeType.SEQUENCE, EdgeSource.INFERRED, True),
        ],
        T0,
    )

    context = await read_analysis_context(store.reading, a, 1)

    assert context.job == await store.catalog.get_job("j")
    assert context.endpoints == await store.catalog.list_endpoints("j")
    assert context.recent == await store.runs.list_runs(a.id, limit=1)
    assert [run.slot_at for run in context.recent] == [T0 + seconds(60)]
    assert context.edges == await store.graph.list_edges("j")
    assert [(e.from_node, e.to_node) for e in context.edges] == [("j/a", "j/b")]
    assert context.schema is not None
    assert context.schema.json_schema() == schema.json_schema()
    assert context.newest_finished_slot == T0
    b = await store.catalog.get_endpoint("j/b")
    assert (await read_analysis_context(store.reading, b, 5)).schema is None
    assert await store.runs.newest_finished_slot(new_id()) is None
    with pytest.raises(EndpointNotFound):
        await read_analysis_context(store.reading, replace(a, id=new_id()), 5)


def _proposal(endpoint_id: str, job_id: str, created: datetime, **fields: object) -> Proposal:
    base = Proposal(
        id=new_id(),
        endpoint_id=endpoint_id,
        job_id=job_id,
        kind=ProposalKind.INTERVAL,
        reason="changing fast",
        proposed_by="heuristic",
        created_at=created,
        status=ProposalStatus.PENDING,
        session_id=new_id(),
        interval_seconds=30.0,
        ttl_seconds=600.0,
        expires_at=created + seconds(3600),
    )
    return replace(base, **fields)  # type: ignore[arg-type]


async def test_proposals_are_listed_decided_once_and_counted(store: Store) -> None:
    await _declare(store, PlannerMode.REVIEW, "a", "b")
    await _declare(store, PlannerMode.AUTO, "c", job="k")
    a, c = await store.catalog.get_endpoint("j/a"), await store.catalog.get_endpoint("k/c")
    first = _proposal(a.id, a.job_id, T0)
    second = _proposal(
        a.id, a.job_id, T0 + seconds(5), kind=ProposalKind.PAUSE, at=T0 + seconds(99)
    )
    other = _proposal(c.id, c.job_id, T0 + seconds(9), status=ProposalStatus.APPLIED)
    for proposal in (first, second, other):
        await store.planner.add_proposal(proposal)

    assert await store.planner.get_proposal(second.id) == second
    assert await store.planner.list_proposals() == [other, second, first]
    assert await store.planner.list_proposals(job_name="j") == [second, first]
    assert await store.planner.list_proposals(status=ProposalStatus.APPLIED) == [other]
    assert await store.planner.list_proposals(endpoint_id=a.id, limit=1) == [second]

    decided = await store.planner.decide(first.id, ProposalStatus.APPLIED, "ann", "hint", T0)
    assert (decided.status, decided.decided_by, decided.decided_at, decided.outcome) == (
        ProposalStatus.APPLIED,
        "ann",
        T0,
        "hint",
    )
    with pytest.raises(ProposalNotPending):
        await store.planner.decide(first.id, ProposalStatus.REJECTED, "bob", "no", T0)
    assert await store.planner.count_applied(a.id, T0) == 1
    assert await store.planner.count_applied(a.id, T0 + seconds(1)) == 0
    assert await store.planner.count_applied(new_id(), T0) == 0
    with pytest.raises(ProposalNotFound):
        await store.planner.get_proposal("0" * 32)


async def test_a_dropped_proposal_keeps_its_confidence(store: Store) -> None:
    await _declare(store, PlannerMode.GRADED, "a")
    a = await store.catalog.get_endpoint("j/a")
    dropped = _proposal(
        a.id, a.job_id, T0, status=ProposalStatus.DROPPED, decided_by="graded", confidence=0.6
    )
    await store.planner.add_proposal(dropped)

    assert await store.planner.get_proposal(dropped.id) == dropped
    assert await store.planner.list_proposals(ProposalStatus.DROPPED) == [dropped]


async def test_pending_proposals_expire(store: Store) -> None:
    await _declare(store, PlannerMode.REVIEW, "a")
    a = await store.catalog.get_endpoint("j/a")
    lapsing = _proposal(a.id, a.job_id, T0, expires_at=T0 + seconds(10))
    lasting = _proposal(a.id, a.job_id, T0, expires_at=T0 + seconds(100))
    await store.planner.add_proposal(lapsing)
    await store.planner.add_proposal(lasting)

    assert await store.planner.expire_pending(T0 + seconds(10)) == 1

    expired = await store.planner.get_proposal(lapsing.id)
    assert (expired.status, expired.decided_at) == (ProposalStatus.EXPIRED, T0 + seconds(10))
    assert (await store.planner.get_proposal(lasting.id)).status is ProposalStatus.PENDING


async def test_a_newer_proposal_supersedes_the_endpoints_older_pending_ones(store: Store) -> None:
    await _declare(store, PlannerMode.REVIEW, "a", "b")
    a, b = await store.catalog.get_endpoint("j/a"), await store.catalog.get_endpoint("j/b")
    older = _proposal(a.id, a.job_id, T0)
    old = _proposal(a.id, a.job_id, T0 + seconds(1), kind=ProposalKind.PAUSE, at=T0 + seconds(99))
    decided = _proposal(a.id, a.job_id, T0, status=ProposalStatus.REJECTED, decided_by="ann")
    elsewhere = _proposal(b.id, b.job_id, T0)
    newer = _proposal(a.id, a.job_id, T0 + seconds(5), proposed_by="llm:m", interval_seconds=4.0)
    for proposal in (older, old, decided, elsewhere, newer):
        await store.planner.add_proposal(proposal)

    assert await store.planner.supersede(newer) == 2

    for earlier in (older, old):
        stored = await store.planner.get_proposal(earlier.id)
        assert stored == replace(
            earlier,
            status=ProposalStatus.SUPERSEDED,
            decided_by="llm:m",
            decided_at=T0 + seconds(5),
            outcome=f"superseded by proposal {newer.id}",
            superseded_by=newer.id,
        )
    assert await store.planner.list_proposals(ProposalStatus.PENDING) == [newer, elsewhere]
    assert await store.planner.get_proposal(decided.id) == decided
    assert await store.planner.supersede(newer) == 0
    with pytest.raises(ProposalNotPending):
        await store.planner.decide(older.id, ProposalStatus.APPLIED, "bob", "hint", T0)


async def test_a_jobs_rejection_cool_down_is_stored_and_updated(store: Store) -> None:
    declared = JobDeclaration(Job("j", planner_mode=PlannerMode.GRADED), [spec("a")])
    await apply_to_catalog(store.catalog, [declared], T0)
    longer = JobDeclaration(replace(declared.job, rejection_cooldown_seconds=7200.0), [spec("a")])

    report = await apply_to_catalog(store.catalog, [longer], T0)

    assert report.updated == ["j"]
    assert (await store.catalog.get_job("j")).rejection_cooldown_seconds == 7200.0
    assert "j" in (await apply_to_catalog(store.catalog, [longer], T0)).unchanged


async def test_sessions_are_listed_newest_first(store: Store) -> None:
    await _declare(store, PlannerMode.AUTO, "a", "b")
    await run_once(store, T0)
    await run_once(store, T0)
    first, second = await store.planner.claim_analyses(T0, "p1", 60, 10)
    older = await _finish(store, first, T0)
    newer = await _finish(store, second, T0 + seconds(5))

    assert await store.planner.list_sessions() == [newer, older]
    assert await store.planner.list_sessions(endpoint_id=first.endpoint.id) == [older]
    with pytest.raises(SessionNotFound):
        await store.planner.get_session("0" * 32)


async def test_new_runs_of_a_sibling_make_an_endpoint_due(store: Store) -> None:
    await _declare(store, PlannerMode.AUTO, "watcher", "worker")
    await run_once(store, T0)
    await run_once(store, T0)
    claims = await store.planner.claim_analyses(T0, "p1", 60, 10)
    for claim in claims:
        await _finish(store, claim, T0, look_again=10)
    worker = await store.catalog.get_endpoint("j/worker")
    await set_pause(store.catalog, worker.id, Pause("off until needed"), T0)

    await run_once(store, T0 + seconds(60))

    due = await store.planner.claim_analyses(T0 + seconds(61), "p1", 60, 10)
    assert sorted(c.endpoint.name for c in due) == ["watcher", "worker"]


async def test_concurrent_planners_never_share_an_endpoint(store: Store) -> None:
    names = [f"e{i}" for i in range(6)]
    await _declare(store, PlannerMode.AUTO, *names)
    for claim in await store.claims.claim_due(T0, "w1", 30, 10):
        await finish_one(store.claims, claim, "w1", Response(status_code=200, body={}), T0)

    batches = await asyncio.gather(
        *(store.planner.claim_analyses(T0, f"p{i}", 60, 2) for i in range(4))
    )

    claimed = [claim.endpoint.name for batch in batches for claim in batch]
    assert sorted(claimed) == names
