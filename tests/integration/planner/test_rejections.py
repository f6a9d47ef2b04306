"""The admin's word stands (issue 21): a rejected change is neither proposed nor applied again
for the cool-down, whatever the planner and its confidence; a newer proposal supersedes the
endpoint's older pending ones, and a superseded proposal cannot be decided."""

from __future__ import annotations

from datetime import timedelta

import pytest

from cronpilot.domain.errors import ProposalNotPending
from cronpilot.domain.model import Endpoint, Job, PlannerMode
from cronpilot.domain.planning.planning import (
    AnalysisClaim,
    Proposal,
    ProposalDraft,
    ProposalKind,
    ProposalStatus,
)
from cronpilot.domain.ports import JobDeclaration, Store
from cronpilot.planner.freshness import FreshnessAnalyst
from cronpilot.planner.tools import ToolBox, ToolContext
from cronpilot.planner.worker import PlannerWorker
from cronpilot.usecases.declarations import apply_to_catalog
from cronpilot.usecases.proposals import ProposalDesk, Proposer
from tests.integration.planner.builders import answer, declare, make_planner, spec
from tests.support.clock import FakeClock
from tests.support.settings import limits_for_tests

LIMITS = limits_for_tests(max_changes_per_hour=100)
STEADY = {"queue": 0}
"""The answer of an endpoint that never changes: the built-in planner relaxes it."""


async def _reported(store: Store, clock: FakeClock) -> tuple[Endpoint, PlannerWorker]:
    """The report's endpoint: a job with no `planner_mode` (graded), `a` every 2s within
    [1s, 1m], answered alike a dozen times, its sibling `b` answering anew each time, and the
    built-in planner."""
    clamps = {"min_interval_seconds": 1, "max_interval_seconds": 60}
    endpoints = await declare(
        store,
        clock.now(),
        spec("a", every=2, **clamps),
        spec("b", every=2, **clamps),
        mode=PlannerMode.GRADED,
    )
    for n in range(12):
        await answer(store, "j/a", STEADY)
        await answer(store, "j/b", {"queue": n})
    # Every pass is stored, so that the sessions show what each one did: a pass held back by
    # a rejection finds nothing new and is otherwise quiet (`domain.schedule.quiet_passes`).
    planner = make_planner(
        store, FreshnessAnalyst(), clock, limits=LIMITS, planner_keep_quiet_sessions=True
    )
    return endpoints["a"], planner


async def _round(store: Store, clock: FakeClock, planner: PlannerWorker) -> None:
    """A minute and more later, with new (alike) answers: the built-in planner looks again
    every other round (after a dwell)."""
    clock.advance(62)
    for _ in range(2):
        await answer(store, "j/a", STEADY)
    await planner.run_round()


def _graded(confidence: float) -> Proposer:
    return Proposer("llm:test", PlannerMode.GRADED, "s1", confidence=confidence)


def _every(seconds: float, reason: str = "steady") -> ProposalDraft:
    return ProposalDraft(ProposalKind.INTERVAL, reason, seconds, ttl_seconds=3600)


async def test_a_rejected_change_is_not_proposed_or_applied_again_for_the_cool_down(
    store: Store, clock: FakeClock
) -> None:
    a, planner = await _reported(store, clock)
    await planner.analyse_now("j/a")
    [held] = await store.planner.list_proposals()
    assert (held.status, held.interval_seconds, held.confidence) == (
        ProposalStatus.PENDING,
        2.8,
        0.8,
    )
    rejected = await planner.desk.reject(held.id, "ann", "keep it at 2s", clock.now())

    await _round(store, clock, planner)
    await _round(store, clock, planner)
    again = await planner.desk.propose(_every(2.9), a.id, _graded(0.95), clock.now())
    auto = Proposer("llm:test", PlannerMode.AUTO, "s2")
    ordered = await planner.desk.propose(_every(2.6), a.id, auto, clock.now())

    assert rejected.decided_at is not None
    until = rejected.decided_at + timedelta(hours=1)
    held_back = (
        f"the same change was rejected by ann at {rejected.decided_at.isoformat()} "
        f"(keep it at 2s), proposal {held.id}; it is held until {until.isoformat()}"
    )
    [session, *_] = await store.planner.list_sessions(a.id)
    assert [c.outcome for c in session.tool_calls if c.name == "propose_interval"] == [
        f"not made: {held_back}"
    ]
    for refused in (again, ordered):
        assert (refused.status, refused.outcome) == (ProposalStatus.REFUSED, held_back)
    assert (await store.catalog.get_endpoint("j/a")).interval_hint is None
    made = {p.id for p in await store.planner.list_proposals(endpoint_id=a.id)}
    assert made == {ordered.id, again.id, held.id}
    # The rejection still counts against the job's autonomy.
    [step] = await store.planner.autonomy_history(a.job_id)
    assert (step.rejections, step.proposal_id) == (1, held.id)

    clock.advance(3600 - 2 * 62)
    await _round(store, clock, planner)

    # The cool-down is over: the planner proposes its damped step again, for review.
    newest = (await store.planner.list_proposals(endpoint_id=a.id))[0]
    assert (newest.status, newest.interval_seconds, newest.confidence) == (
        ProposalStatus.PENDING,
        2.8,
        0.8,
    )


async def test_a_change_more_than_ten_percent_away_is_another_change(
    store: Store, clock: FakeClock
) -> None:
    a, planner = await _reported(store, clock)
    held = await planner.desk.propose(_every(4), a.id, _graded(0.9), clock.now())
    await planner.desk.reject(held.id, "ann", "no", clock.now())
    clock.advance(62)

    other = await planner.desk.propose(_every(4.5), a.id, _graded(0.95), clock.now())

    assert other.status is ProposalStatus.APPLIED


async def test_the_llms_tool_says_why_it_held_back(store: Store, clock: FakeClock) -> None:
    a, planner = await _reported(store, clock)
    held = await planner.desk.propose(_every(4), a.id, _graded(0.9), clock.now())
    await planner.desk.reject(held.id, "ann", "no", clock.now())
    box = ToolBox(
        ToolContext(
            claim=AnalysisClaim(a, PlannerMode.GRADED, clock.now() + timedelta(minutes=5)),
            siblings={"a": a},
            store=store,
            desk=planner.desk,
            proposer=Proposer("llm:test", PlannerMode.GRADED, "s1"),
            now=clock.now,
        )
    )

    asked = await box.call(
        "propose_interval", {"interval_seconds": 4.4, "ttl_seconds": 600, "reason": "steady"}
    )

    assert isinstance(asked.data, dict)
    assert asked.data["status"] == "not_made"
    assert asked.data["outcome"].startswith("the same change was rejected by ann at ")
    assert asked.data["outcome"].endswith(
        f"it is held until {(clock.now() + timedelta(hours=1)).isoformat()}"
    )


async def test_a_jobs_own_cool_down_overrides_the_setting(store: Store, clock: FakeClock) -> None:
    job = Job("j", planner_mode=PlannerMode.REVIEW, rejection_cooldown_seconds=600)
    await apply_to_catalog(store.catalog, [JobDeclaration(job, [spec("a", every=2)])], clock.now())
    a = await store.catalog.get_endpoint("j/a")
    desk = ProposalDesk(store.unit_of_work, store.reading, None, LIMITS)
    review = Proposer("x", PlannerMode.REVIEW)
    held = await desk.propose(_every(4), a.id, review, clock.now())
    await desk.reject(held.id, "ann", "no", clock.now())

    clock.advance(599)
    within = await desk.propose(_every(4), a.id, review, clock.now())
    clock.advance(1)
    after = await desk.propose(_every(4), a.id, review, clock.now())

    assert within.status is ProposalStatus.REFUSED
    assert after.status is ProposalStatus.PENDING


async def _two(desk: ProposalDesk, a: Endpoint, clock: FakeClock) -> tuple[Proposal, Proposal]:
    review = Proposer("heuristic", PlannerMode.REVIEW)
    first = await desk.propose(_every(1, "busy"), a.id, review, clock.now())
    clock.advance(5)
    second = await desk.propose(_every(4, "calm"), a.id, review, clock.now())
    return first, second


async def test_contradictory_proposals_are_never_pending_at_once(
    store: Store, clock: FakeClock
) -> None:
    a = (await declare(store, clock.now(), spec("a", every=2, min_interval_seconds=1)))["a"]
    desk = ProposalDesk(store.unit_of_work, store.reading, None, LIMITS)

    first, second = await _two(desk, a, clock)

    pending = await store.planner.list_proposals(ProposalStatus.PENDING)
    assert pending == [second]
    older = await store.planner.get_proposal(first.id)
    assert (older.status, older.superseded_by, older.outcome) == (
        ProposalStatus.SUPERSEDED,
        second.id,
        f"superseded by proposal {second.id}",
    )
    with pytest.raises(ProposalNotPending) as approving:
        await desk.approve(first.id, "ann", clock.now())
    with pytest.raises(ProposalNotPending) as rejecting:
        await desk.reject(first.id, "ann", "no", clock.now())
    for refused in (approving, rejecting):
        assert str(refused.value) == (
            f"proposal {first.id} is superseded by proposal {second.id}, not pending"
        )
    approved = await desk.approve(second.id, "ann", clock.now())
    assert approved.status is ProposalStatus.APPLIED
    hint = (await store.catalog.get_endpoint("j/a")).interval_hint
    assert hint is not None and hint.interval_seconds == 4


async def test_an_applied_proposal_supersedes_a_refused_one_does_not(
    store: Store, clock: FakeClock
) -> None:
    a = (await declare(store, clock.now(), spec("a", every=2, min_interval_seconds=1)))["a"]
    desk = ProposalDesk(store.unit_of_work, store.reading, None, LIMITS)
    held = await desk.propose(_every(4), a.id, Proposer("x", PlannerMode.REVIEW), clock.now())

    refused = await desk.propose(_every(0.5), a.id, Proposer("y", PlannerMode.AUTO), clock.now())
    still = await store.planner.get_proposal(held.id)
    applied = await desk.propose(_every(8), a.id, Proposer("y", PlannerMode.AUTO), clock.now())
    gone = await store.planner.get_proposal(held.id)

    assert (refused.status, still.status) == (ProposalStatus.REFUSED, ProposalStatus.PENDING)
    assert applied.status is ProposalStatus.APPLIED
    assert (gone.status, gone.superseded_by) == (ProposalStatus.SUPERSEDED, applied.id)
