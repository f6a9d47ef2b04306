"""The proposal desk: guardrails, auto and review, admin decisions, waking schedulers."""

from __future__ import annotations

from datetime import timedelta

import pytest

from cronpilot.adapters.wake import InProcessWaker
from cronpilot.domain.alerts.alerts import AlertEvent
from cronpilot.domain.errors import ProposalNotPending
from cronpilot.domain.model import PlannerMode, Schedule
from cronpilot.domain.planning.planning import ProposalDraft, ProposalKind, ProposalStatus
from cronpilot.domain.ports import Store
from cronpilot.usecases.proposals import ProposalDesk, Proposer
from tests.integration.planner.builders import answer, declare, spec
from tests.support.clock import FakeClock
from tests.support.settings import limits_for_tests
from tests.support.units import no_unit_of_work

LIMITS = limits_for_tests(max_changes_per_hour=2, pending_ttl_seconds=600, max_pause_seconds=900)
AUTO = Proposer("llm:test", PlannerMode.AUTO, "s1")
REVIEW = Proposer("llm:test", PlannerMode.REVIEW, "s1")


def _every(seconds: float, reason: str = "busy") -> ProposalDraft:
    return ProposalDraft(ProposalKind.INTERVAL, reason, seconds, ttl_seconds=300)


async def test_auto_applies_and_wakes_schedulers_when_due_earlier(
    store: Store, clock: FakeClock
) -> None:
    endpoints = await declare(store, clock.now(), spec("a", every=600, min_interval_seconds=5))
    await answer(store, "j/a", {"n": 1})
    waker = InProcessWaker()
    desk = ProposalDesk(store.unit_of_work, store.reading, waker, LIMITS)

    proposal = await desk.propose(_every(30), endpoints["a"].id, AUTO, clock.now())

    assert (proposal.status, proposal.decided_by) == (ProposalStatus.APPLIED, "auto")
    assert proposal.outcome is not None
    assert proposal.outcome.startswith("applied: next run")
    assert await waker.wait(0.01) is True
    later = await desk.propose(_every(60), endpoints["a"].id, AUTO, clock.now())
    assert later.status is ProposalStatus.APPLIED
    assert await waker.wait(0.01) is False


async def test_the_questions_before_an_action_only_read(store: Store, clock: FakeClock) -> None:
    endpoints = await declare(store, clock.now(), spec("a", every=600, min_interval_seconds=5))
    endpoint_id = endpoints["a"].id
    review = ProposalDesk(store.unit_of_work, store.reading, None, LIMITS)
    pending = await review.propose(_every(60), endpoint_id, REVIEW, clock.now())
    desk = ProposalDesk(no_unit_of_work, store.reading, None, LIMITS)

    assert await desk.unneeded(_every(60), endpoint_id, clock.now()) == (
        f"already pending as proposal {pending.id}"
    )
    assert await desk.unneeded(_every(30), endpoint_id, clock.now()) is None
    assert await desk.rejection(_every(30), endpoint_id, clock.now()) is None


async def test_changes_per_hour_are_limited(store: Store, clock: FakeClock) -> None:
    endpoints = await declare(store, clock.now(), spec("a"))
    desk = ProposalDesk(store.unit_of_work, store.reading, None, LIMITS)
    for seconds in (30, 40):
        await desk.propose(_every(seconds), endpoints["a"].id, AUTO, clock.now())

    third = await desk.propose(_every(50), endpoints["a"].id, AUTO, clock.now())
    clock.advance(3601)
    fourth = await desk.propose(_every(50), endpoints["a"].id, AUTO, clock.now())

    assert (third.status, third.decided_by) == (ProposalStatus.REFUSED, "guardrails")
    assert (
        third.outcome == "2 changes were applied to this endpoint in the last hour; the limit is 2"
    )
    assert fourth.status is ProposalStatus.APPLIED


async def test_pause_and_resume_through_proposals(store: Store, clock: FakeClock) -> None:
    endpoints = await declare(store, clock.now(), spec("a"))
    desk = ProposalDesk(store.unit_of_work, store.reading, None, LIMITS)
    until = clock.now() + timedelta(minutes=10)

    paused = await desk.propose(
        ProposalDraft(ProposalKind.PAUSE, "quiet", at=until), endpoints["a"].id, AUTO, clock.now()
    )
    assert paused.status is ProposalStatus.APPLIED
    endpoint = await store.catalog.get_endpoint("j/a")
    assert endpoint.pause is not None
    assert (endpoint.pause.until, endpoint.pause.reason) == (until, "quiet")

    resumed = await desk.propose(
        ProposalDraft(ProposalKind.RESUME, "busy again"), endpoints["a"].id, AUTO, clock.now()
    )
    assert resumed.status is ProposalStatus.APPLIED
    assert (await store.catalog.get_endpoint("j/a")).pause is None


@pytest.mark.parametrize(
    ("proposer", "by"),
    [
        (AUTO, "planner:llm:test"),
        (Proposer("heuristic", PlannerMode.AUTO, "s1"), "planner:heuristic"),
        (Proposer("rules", PlannerMode.AUTO, "s1"), "rules"),
        (REVIEW, "planner:llm:test"),
    ],
    ids=["llm", "heuristic", "rules", "approved"],
)
async def test_a_pause_keeps_the_planner_that_made_it_as_its_actor(
    store: Store, clock: FakeClock, proposer: Proposer, by: str
) -> None:
    endpoints = await declare(store, clock.now(), spec("a"))
    desk = ProposalDesk(store.unit_of_work, store.reading, None, LIMITS)
    draft = ProposalDraft(ProposalKind.PAUSE, "quiet", at=clock.now() + timedelta(minutes=10))

    proposed = await desk.propose(draft, endpoints["a"].id, proposer, clock.now())
    if proposed.status is ProposalStatus.PENDING:
        # Approved by a person, the pause is still the planner's: the proposal says who
        # approved it.
        approved = await desk.approve(proposed.id, "cli:ann@h", clock.now())
        assert approved.decided_by == "cli:ann@h"

    paused = (await store.catalog.get_endpoint("j/a")).pause
    assert paused is not None
    assert paused.by == by


async def test_admin_decisions_are_final_and_lapsed_proposals_expire(
    store: Store, clock: FakeClock
) -> None:
    endpoints = await declare(
        store, clock.now(), spec("a", min_interval_seconds=20), spec("b", min_interval_seconds=20)
    )
    desk = ProposalDesk(store.unit_of_work, store.reading, None, LIMITS)
    rejected = await desk.propose(_every(30), endpoints["a"].id, REVIEW, clock.now())
    # On another endpoint: a newer proposal for `a` would supersede the one rejected here.
    lapsing = await desk.propose(_every(40), endpoints["b"].id, REVIEW, clock.now())
    assert rejected.status is ProposalStatus.PENDING

    done = await desk.reject(rejected.id, "bob@ops", "not during the sale", clock.now())
    assert (done.status, done.decided_by, done.outcome) == (
        ProposalStatus.REJECTED,
        "bob@ops",
        "not during the sale",
    )
    with pytest.raises(ProposalNotPending):
        await desk.approve(rejected.id, "ann@ops", clock.now())

    clock.advance(600)
    with pytest.raises(ProposalNotPending):
        await desk.approve(lapsing.id, "ann@ops", clock.now())
    assert (await store.planner.get_proposal(lapsing.id)).status is ProposalStatus.EXPIRED
    assert (await store.catalog.get_endpoint("j/b")).interval_hint is None


async def test_an_approval_records_what_was_applied(store: Store, clock: FakeClock) -> None:
    endpoints = await declare(store, clock.now(), spec("a", min_interval_seconds=20))
    desk = ProposalDesk(store.unit_of_work, store.reading, None, LIMITS)
    pending = await desk.propose(_every(30), endpoints["a"].id, REVIEW, clock.now())

    approved = await desk.approve(pending.id, "ann@ops", clock.now())

    stored = await store.planner.get_proposal(pending.id)
    assert stored == approved
    endpoint = await store.catalog.get_endpoint("j/a")
    assert endpoint.next_run_at is not None
    assert stored.outcome == (
        f"applied: next run {endpoint.next_run_at.isoformat()} ({endpoint.next_run_source.value})"
    )


async def test_pausing_and_resuming_a_dag_dependant_says_when_it_runs(
    store: Store, clock: FakeClock
) -> None:
    endpoints = await declare(
        store,
        clock.now(),
        spec("fetch"),
        spec("load", schedule=Schedule(), depends_on=("fetch",)),
    )
    desk = ProposalDesk(store.unit_of_work, store.reading, None, LIMITS)
    until = clock.now() + timedelta(seconds=600)
    pause = ProposalDraft(ProposalKind.PAUSE, "quiet", at=until)
    resume = ProposalDraft(ProposalKind.RESUME, "busy again")

    paused = await desk.propose(pause, endpoints["load"].id, AUTO, clock.now())
    resumed = await desk.propose(resume, endpoints["load"].id, AUTO, clock.now())

    assert paused.outcome == f"applied: paused until {until.isoformat()} (paused)"
    assert resumed.outcome == "applied: runs when its upstreams succeed (dag)"


async def test_a_proposal_held_for_review_alerts_the_webhooks(
    store: Store, clock: FakeClock
) -> None:
    hook = "https://hooks.example.com/review"
    endpoints = await declare(store, clock.now(), spec("a", notify=(hook,)), spec("b"))
    desk = ProposalDesk(store.unit_of_work, store.reading, None, LIMITS)

    pending = await desk.propose(_every(30, "calm"), endpoints["a"].id, REVIEW, clock.now())
    await desk.propose(_every(30), endpoints["b"].id, REVIEW, clock.now())
    await desk.propose(_every(45), endpoints["a"].id, AUTO, clock.now())

    [alert] = await store.notifications.list_notifications()
    assert (alert.event, alert.url, alert.endpoint_id) == (
        AlertEvent.PROPOSAL_PENDING,
        hook,
        endpoints["a"].id,
    )
    assert alert.payload["endpoint"] == "j/a"
    assert alert.payload["proposal"]["id"] == pending.id
    assert alert.payload["proposal"]["reason"] == "calm"
