"""Graded autonomy through the proposal desk and the tools (issue 13, decision 0029): the
confidence decides, dangerous endpoints wait for review, admins' decisions teach the job's
threshold, proposals in force or pending are not made again, and alternation cools down."""

from __future__ import annotations

from datetime import timedelta

import pytest

from cronpilot.domain.model import Endpoint, PlannerMode
from cronpilot.domain.planning.autonomy import START_THRESHOLD
from cronpilot.domain.planning.planning import (
    AnalysisClaim,
    ProposalDraft,
    ProposalKind,
    ProposalStatus,
)
from cronpilot.domain.ports import Store
from cronpilot.planner.session import Verdict, submitted
from cronpilot.planner.tools import ToolBox, ToolContext
from cronpilot.usecases.proposals import ProposalDesk, Proposer
from tests.integration.planner.builders import answer, declare, make_planner, spec
from tests.support.clock import FakeClock
from tests.support.settings import limits_for_tests

LIMITS = limits_for_tests(max_changes_per_hour=100)


def _graded(confidence: float | None) -> Proposer:
    return Proposer("llm:test", PlannerMode.GRADED, "s1", confidence=confidence)


async def _one(
    store: Store, clock: FakeClock, mode: PlannerMode = PlannerMode.GRADED, **fields: object
) -> tuple[Endpoint, ProposalDesk]:
    """Endpoint `j/a` (with `fields`) in a job of `mode`, and a desk."""
    endpoints = await declare(store, clock.now(), spec("a", **fields), mode=mode)
    return endpoints["a"], ProposalDesk(store.unit_of_work, store.reading, None, LIMITS)


def _every(seconds: float) -> ProposalDraft:
    return ProposalDraft(ProposalKind.INTERVAL, "busy", seconds, ttl_seconds=300)


async def test_the_confidence_drops_holds_or_applies(store: Store, clock: FakeClock) -> None:
    endpoint, desk = await _one(store, clock)
    a, now = endpoint.id, clock.now()

    dropped = await desk.propose(_every(30), a, _graded(0.69), now)
    held = await desk.propose(_every(31), a, _graded(0.7), now)
    applied = await desk.propose(_every(32), a, _graded(START_THRESHOLD), now)
    ruled = await desk.propose(_every(33), a, _graded(None), now)

    assert (dropped.status, dropped.decided_by, dropped.outcome, dropped.confidence) == (
        ProposalStatus.DROPPED,
        "graded",
        "confidence 0.69 is below the floor 0.7",
        0.69,
    )
    assert (held.status, held.outcome) == (
        ProposalStatus.PENDING,
        "confidence 0.7 is below the job's threshold 0.92",
    )
    assert (applied.status, applied.decided_by) == (ProposalStatus.APPLIED, "graded")
    assert ruled.status is ProposalStatus.APPLIED
    hint = (await store.catalog.get_endpoint("j/a")).interval_hint
    assert hint is not None and hint.interval_seconds == 33


async def test_timed_proposals_on_dangerous_endpoints_wait_for_review(
    store: Store, clock: FakeClock
) -> None:
    endpoints = await declare(
        store,
        clock.now(),
        spec("post", method="POST"),
        spec("marked", dangerous=True),
        spec("safe"),
        mode=PlannerMode.GRADED,
    )
    desk = ProposalDesk(store.unit_of_work, store.reading, None, LIMITS)
    run_now = ProposalDraft(ProposalKind.RUN_NOW, "now", ttl_seconds=60)
    at = ProposalDraft(
        ProposalKind.NEXT_TIME, "soon", at=clock.now() + timedelta(seconds=30), ttl_seconds=60
    )

    made = {
        (name, draft.kind): await desk.propose(draft, endpoints[name].id, _graded(1.0), clock.now())
        for name in ("post", "marked", "safe")
        for draft in (run_now, at)
    }
    interval = await desk.propose(_every(30), endpoints["post"].id, _graded(1.0), clock.now())

    held = {key for key, proposal in made.items() if proposal.status is ProposalStatus.PENDING}
    assert held == {(name, kind) for name in ("post", "marked") for kind in (run_now.kind, at.kind)}
    assert made["post", ProposalKind.RUN_NOW].outcome == (
        "run_now on a dangerous endpoint (POST) waits for review whatever the confidence"
    )
    assert made["safe", ProposalKind.RUN_NOW].status is ProposalStatus.APPLIED
    assert interval.status is ProposalStatus.APPLIED


async def test_admins_decisions_move_the_threshold_after_five(
    store: Store, clock: FakeClock
) -> None:
    a, desk = await _one(store, clock)

    async def decide(approve: bool, seconds: float) -> None:
        held = await desk.propose(_every(seconds), a.id, _graded(0.8), clock.now())
        if approve:
            await desk.approve(held.id, "ann", clock.now())
        else:
            await desk.reject(held.id, "bob", "no", clock.now())

    for seconds in (30, 31, 32, 33):
        await decide(True, seconds)
    four = await store.planner.autonomy_history(a.job_id)
    await decide(True, 34)
    five = await store.planner.autonomy_history(a.job_id)
    # Rejected changes stand for an hour (`domain.planning.rejections`): each is another change.
    for seconds in (100, 200, 300, 400, 500):
        await decide(False, seconds)
    ten = await store.planner.autonomy_history(a.job_id)
    review = await desk.propose(
        _every(40), a.id, Proposer("llm:test", PlannerMode.REVIEW), clock.now()
    )
    await desk.approve(review.id, "ann", clock.now())

    assert [s.threshold for s in four] == [START_THRESHOLD] * 4
    assert (four[-1].approvals, four[-1].rejections) == (4, 0)
    assert five[-1].threshold == 0.87
    assert five[-1].note == "approved: 5 approved, 0 rejected: threshold 0.92 → 0.87"
    assert ten[-1].threshold == 0.97
    # A proposal of review mode carries no confidence: it teaches nothing.
    assert await store.planner.autonomy_history(a.job_id) == ten
    lower = await desk.propose(_every(41), a.id, _graded(0.95), clock.now())
    assert lower.status is ProposalStatus.PENDING


async def test_an_alternating_interval_cools_down(store: Store, clock: FakeClock) -> None:
    endpoint, desk = await _one(store, clock, PlannerMode.AUTO, min_interval_seconds=5)
    auto = Proposer("heuristic", PlannerMode.AUTO)
    for seconds in (60, 30, 60):
        await desk.propose(_every(seconds), endpoint.id, auto, clock.now())
        clock.advance(60)

    tighten = await desk.propose(_every(30), endpoint.id, auto, clock.now())
    relax_on = await desk.propose(_every(120), endpoint.id, auto, clock.now())
    clock.advance(3600)
    later = await desk.propose(_every(30), endpoint.id, auto, clock.now())

    assert tighten.status is ProposalStatus.REFUSED
    assert tighten.outcome is not None
    assert tighten.outcome.startswith("the last interval proposals alternated direction")
    assert relax_on.status is ProposalStatus.APPLIED
    assert later.status is ProposalStatus.APPLIED


async def test_proposals_in_force_or_pending_are_not_made_again(
    store: Store, clock: FakeClock
) -> None:
    endpoint, desk = await _one(store, clock, PlannerMode.REVIEW)
    a = endpoint.id
    await desk.propose(_every(45), a, Proposer("x", PlannerMode.AUTO), clock.now())
    pending = await desk.propose(_every(30), a, Proposer("x", PlannerMode.REVIEW), clock.now())

    assert await desk.unneeded(_every(30), a, clock.now()) == (
        f"already pending as proposal {pending.id}"
    )
    assert await desk.unneeded(_every(45), a, clock.now()) == "already in force"
    assert await desk.unneeded(_every(50), a, clock.now()) is None


async def test_a_graded_session_proposes_at_submit_with_its_confidence(
    store: Store, clock: FakeClock
) -> None:
    endpoints = await declare(store, clock.now(), spec("a"), mode=PlannerMode.GRADED)
    context = ToolContext(
        claim=AnalysisClaim(endpoints["a"], PlannerMode.GRADED, clock.now() + timedelta(minutes=5)),
        siblings=endpoints,
        store=store,
        desk=ProposalDesk(store.unit_of_work, store.reading, None, LIMITS),
        proposer=Proposer("llm:test", PlannerMode.GRADED, "s1"),
        now=clock.now,
    )
    box = ToolBox(context)
    asked = await box.call(
        "propose_interval", {"interval_seconds": 30, "ttl_seconds": 600, "reason": "busy"}
    )
    twice = await box.call(
        "propose_interval", {"interval_seconds": 30, "ttl_seconds": 600, "reason": "busy"}
    )
    assert await store.planner.list_proposals() == []
    done = await box.call(
        "submit_analysis", {"reasoning": "busy", "confidence": 0.8, "next_analysis_in_seconds": 60}
    )

    [made] = await store.planner.list_proposals()
    assert asked.data == {
        "status": "deferred",
        "outcome": "deferred: proposed at submit_analysis, decided by its confidence",
    }
    assert twice.data == {"status": "not_made", "outcome": "already proposed in this analysis"}
    assert (made.status, made.confidence) == (ProposalStatus.PENDING, 0.8)
    assert box.calls[-1].outcome == f"analysis submitted; held for review as proposal {made.id}"
    assert isinstance(done.data, dict) and done.data["ok"] is True
    assert box.deferred == []


class _Sure:
    """An analyst (as an LLM would) that proposes one interval at confidence 0.95."""

    def __init__(self, interval: float) -> None:
        self.interval = interval

    @property
    def name(self) -> str:
        return "llm:test"

    @property
    def yields_to_rules(self) -> bool:
        return False

    async def analyse(self, brief: str, toolbox: ToolBox) -> Verdict:
        self.brief = brief
        args = {"interval_seconds": self.interval, "ttl_seconds": 600, "reason": "sure"}
        await toolbox.call("propose_interval", args)
        submit = {"reasoning": "sure", "confidence": 0.95, "next_analysis_in_seconds": 600}
        await toolbox.call("submit_analysis", submit)
        return submitted(toolbox)


@pytest.mark.parametrize(
    ("interval", "status"), [(10.0, ProposalStatus.APPLIED), (80.0, ProposalStatus.PENDING)]
)
async def test_graded_weighs_a_proposal_by_its_departure_from_the_suggestion(
    store: Store, clock: FakeClock, interval: float, status: ProposalStatus
) -> None:
    """The built-in planner would call the busy endpoint every 10 s: a sure proposal of that
    is applied, one of every 80 s (x4 the other way) is held for review."""
    clamps = {"min_interval_seconds": 5, "max_interval_seconds": 3600}
    await declare(
        store,
        clock.now(),
        spec("silent", every=20, **clamps),
        spec("busy", every=20, **clamps),
        mode=PlannerMode.GRADED,
    )
    for n in range(12):
        await answer(store, "j/silent", {"n": 0})
        await answer(store, "j/busy", {"n": n // 2})
    clock.advance(300)
    analyst = _Sure(interval)
    planner = make_planner(store, analyst, clock, limits=LIMITS)

    await planner.analyse_now("j/busy")

    [made] = await store.planner.list_proposals()
    assert made.status is status, made.outcome
    assert "Suggested interval: every 10 s would keep the copy fresh" in analyst.brief
