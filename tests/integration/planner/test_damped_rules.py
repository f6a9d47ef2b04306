"""Damped rules through the planner worker and the proposal desk, on every store (issue 21,
decision 0032): a rule-made change dwells before a rule replaces it, `for:` delays a firing
until the condition has held that long, rules count in the hourly limit, and `urgent: true`
is exempt from both dwell and limit."""

from __future__ import annotations

from dataclasses import replace

from cronpilot.domain.model import PlannerMode, new_id
from cronpilot.domain.planning.planning import (
    AnalysisSession,
    ProposalDraft,
    ProposalKind,
    ProposalStatus,
)
from cronpilot.domain.ports import Store
from cronpilot.domain.rules.rule_firing import URGENT_RULES
from cronpilot.domain.rules.rules import ActionKind, Rule, RuleAction, RuleOutcome
from cronpilot.planner.freshness import FreshnessAnalyst
from cronpilot.planner.worker import PlannerWorker
from cronpilot.usecases.proposals import ProposalDesk, Proposer
from tests.integration.planner.builders import answer, declare, make_planner, spec
from tests.support.clock import FakeClock
from tests.support.settings import limits_for_tests

CLAMPED = {"min_interval_seconds": 2.0, "max_interval_seconds": 120.0}
FAST = Rule("depth.body.pending > 200", RuleAction(ActionKind.INTERVAL, interval_seconds=3))
SLOW = Rule("depth.body.pending < 50", RuleAction(ActionKind.INTERVAL, interval_seconds=60))
DWELL = 120.0


async def _queue(store: Store, clock: FakeClock, *rules: Rule) -> None:
    await declare(
        store,
        clock.now(),
        spec("depth", every=5),
        spec("processor", every=10, rules=rules, **CLAMPED),
        job="queue",
    )


async def _depth(
    store: Store, clock: FakeClock, planner: PlannerWorker, pending: int, after: float = 1
) -> None:
    """The queue's depth answers `pending`, then a planner round, `after` seconds later."""
    await answer(store, "queue/depth", {"pending": pending})
    clock.advance(after)
    await planner.run_round()


async def _last_pass(store: Store) -> AnalysisSession:
    return next(s for s in await store.planner.list_sessions(limit=100) if s.planner == "rules")


def _planner(store: Store, clock: FakeClock, changes_per_hour: int = 100) -> PlannerWorker:
    limits = limits_for_tests(max_changes_per_hour=changes_per_hour)
    # Every pass stored: these tests read what each pass decided (`domain.schedule.quiet_passes`).
    return make_planner(
        store,
        FreshnessAnalyst(),
        clock,
        limits=limits,
        rules_dwell_seconds=DWELL,
        planner_keep_quiet_sessions=True,
    )


async def test_a_rule_made_change_dwells_before_a_rule_replaces_it(
    store: Store, clock: FakeClock
) -> None:
    await _queue(store, clock, FAST, SLOW)
    planner = _planner(store, clock)
    await _depth(store, clock, planner, 480)

    await _depth(store, clock, planner, 10, after=DWELL - 2)

    [fast] = await store.planner.list_proposals()
    [held] = (await _last_pass(store)).rule_evaluations[-1:]
    assert (held.number, held.outcome) == (2, RuleOutcome.DWELLING)
    assert f"(proposal {fast.id}, applied) dwells 120s, until" in held.detail
    # The dwell is over: the rule that holds now fires.
    await _depth(store, clock, planner, 10, after=2)
    slow, _ = await store.planner.list_proposals()
    assert (slow.interval_seconds, slow.status) == (60, ProposalStatus.APPLIED)


async def test_a_rules_own_dwell_overrides_the_setting(store: Store, clock: FakeClock) -> None:
    await _queue(store, clock, FAST, Rule(SLOW.when, SLOW.then, dwell_seconds=10))
    planner = _planner(store, clock)
    await _depth(store, clock, planner, 480)

    await _depth(store, clock, planner, 10, after=5)
    await _depth(store, clock, planner, 10, after=5)

    assert [p.interval_seconds for p in await store.planner.list_proposals()] == [60, 3]


async def test_for_delays_a_firing_until_the_condition_has_held_that_long(
    store: Store, clock: FakeClock
) -> None:
    patient = Rule(FAST.when, FAST.then, for_seconds=30)
    await _queue(store, clock, patient)
    planner = _planner(store, clock)

    await _depth(store, clock, planner, 480)
    await _depth(store, clock, planner, 490, after=20)
    assert await store.planner.list_proposals() == []
    [waiting] = (await _last_pass(store)).rule_evaluations
    assert waiting.outcome is RuleOutcome.PENDING
    assert "fires once it has held for 30s" in waiting.detail
    # It stopped holding once: the 30 s count again from when it held again.
    await _depth(store, clock, planner, 10, after=5)
    await _depth(store, clock, planner, 480, after=5)
    await _depth(store, clock, planner, 480, after=25)
    assert await store.planner.list_proposals() == []

    await _depth(store, clock, planner, 480, after=5)

    [fired] = await store.planner.list_proposals()
    assert (fired.interval_seconds, fired.status) == (3, ProposalStatus.APPLIED)


async def test_rules_count_in_the_hourly_limit_and_try_again_once_per_dwell(
    store: Store, clock: FakeClock
) -> None:
    await _queue(store, clock, FAST, SLOW)
    planner = _planner(store, clock, changes_per_hour=1)
    await _depth(store, clock, planner, 480)

    await _depth(store, clock, planner, 10, after=DWELL)

    refused, applied = await store.planner.list_proposals()
    assert (applied.status, refused.status) == (ProposalStatus.APPLIED, ProposalStatus.REFUSED)
    assert refused.outcome == (
        "1 changes were applied to this endpoint in the last hour; the limit is 1"
    )
    [evaluation] = (await _last_pass(store)).rule_evaluations[-1:]
    assert evaluation.outcome is RuleOutcome.REFUSED
    # The refusal dwells too: the rule does not knock on every new run.
    await _depth(store, clock, planner, 10, after=5)
    assert len(await store.planner.list_proposals()) == 2
    assert (await _last_pass(store)).rule_evaluations[-1].outcome is RuleOutcome.DWELLING


async def test_an_urgent_rule_waits_for_no_dwell_and_no_hourly_limit(
    store: Store, clock: FakeClock
) -> None:
    urgent = Rule(SLOW.when, SLOW.then, urgent=True)
    await _queue(store, clock, FAST, urgent)
    planner = _planner(store, clock, changes_per_hour=1)
    await _depth(store, clock, planner, 480)

    await _depth(store, clock, planner, 10)

    slow, fast = await store.planner.list_proposals()
    assert (fast.proposed_by, fast.status) == ("rules", ProposalStatus.APPLIED)
    assert (slow.kind, slow.interval_seconds) == (ProposalKind.INTERVAL, 60)
    assert (slow.proposed_by, slow.status) == (URGENT_RULES, ProposalStatus.APPLIED)
    # Its change dwells like any rule's: the rule it replaced waits.
    await _depth(store, clock, planner, 480)
    assert (await _last_pass(store)).rule_evaluations[0].outcome is RuleOutcome.DWELLING


async def test_an_admin_approving_an_urgent_rules_proposal_is_not_held_by_the_limit(
    store: Store, clock: FakeClock
) -> None:
    endpoints = await declare(store, clock.now(), spec("a", **CLAMPED), spec("b", **CLAMPED))
    desk = ProposalDesk(
        store.unit_of_work, store.reading, None, limits_for_tests(max_changes_per_hour=1)
    )
    draft = ProposalDraft(ProposalKind.INTERVAL, "proposed by rule 1", 30, ttl_seconds=600)
    now = clock.now()
    held = {}
    for by, name in (("rules", "a"), (URGENT_RULES, "b")):
        held[by] = await desk.propose(
            draft, endpoints[name].id, Proposer(by, PlannerMode.REVIEW), now
        )
        # The hour's one change, recorded as applied beside the held proposal (an applied
        # proposal made through the desk would supersede it).
        applied = replace(held[by], id=new_id(), status=ProposalStatus.APPLIED, decided_at=now)
        await store.planner.add_proposal(applied)

    ruled = await desk.approve(held["rules"].id, "cli:ann@h", clock.now())
    urgent = await desk.approve(held[URGENT_RULES].id, "cli:ann@h", clock.now())

    assert ruled.status is ProposalStatus.REFUSED
    assert "in the last hour" in (ruled.outcome or "")
    assert urgent.status is ProposalStatus.APPLIED


async def test_a_rules_change_an_admin_rejected_waits_quietly_for_the_cool_down(
    store: Store, clock: FakeClock
) -> None:
    await declare(
        store,
        clock.now(),
        spec("depth", every=5),
        spec("processor", every=10, rules=(FAST,), **CLAMPED),
        job="queue",
        mode=PlannerMode.REVIEW,
    )
    planner = _planner(store, clock)
    await _depth(store, clock, planner, 480)
    [held] = await store.planner.list_proposals()
    await planner.desk.reject(held.id, "cli:ann@h", "not now", clock.now())

    for _ in range(4):
        await _depth(store, clock, planner, 480, after=DWELL)

    # Neither proposed again nor refused once per dwell: the rule says why it waits.
    assert [p.id for p in await store.planner.list_proposals()] == [held.id]
    [waiting] = (await _last_pass(store)).rule_evaluations
    assert waiting.outcome is RuleOutcome.REJECTED
    assert f"(not now), proposal {held.id}; it is held until" in waiting.detail
