"""The rules planner through the worker and the proposal desk, on every store: the first rule
that holds proposes its action, once; it wins over the built-in planner; a rule that cannot be
evaluated is recorded, counted, and the planner goes on."""

from __future__ import annotations

import functools
from datetime import timedelta

from cronpilot.adapters.metrics import PrometheusTelemetry
from cronpilot.domain.model import IntervalHint, Pause, PlannerMode, ScheduleSource
from cronpilot.domain.planning.planning import (
    AnalysisSession,
    ProposalKind,
    ProposalStatus,
    SessionStatus,
)
from cronpilot.domain.ports import Store
from cronpilot.domain.rules.rule_firing import DEFAULT_RULE_TTL_SECONDS
from cronpilot.domain.rules.rules import ActionKind, Rule, RuleAction, RuleOutcome
from cronpilot.planner.freshness import FreshnessAnalyst
from cronpilot.planner.worker import PlannerWorker
from tests.integration.planner.builders import answer, declare, spec
from tests.integration.planner.builders import make_planner as _make_planner
from tests.support.clock import FakeClock
from tests.support.scheduling import set_hints, set_pause

# These tests read what every pass saw: quiet passes are stored too
# (`domain.schedule.quiet_passes`).
make_planner = functools.partial(_make_planner, planner_keep_quiet_sessions=True)

CLAMPED = {"min_interval_seconds": 2.0, "max_interval_seconds": 120.0}
FAST = Rule("depth.body.pending > 200", RuleAction(ActionKind.INTERVAL, interval_seconds=3))
SLOW = Rule("depth.body.pending < 50", RuleAction(ActionKind.INTERVAL, interval_seconds=60))


async def _queue(
    store: Store, clock: FakeClock, *rules: Rule, mode: PlannerMode = PlannerMode.AUTO
) -> None:
    await declare(
        store,
        clock.now(),
        spec("depth", every=5),
        spec("processor", every=10, rules=rules, **CLAMPED),
        job="queue",
        mode=mode,
    )


async def _depth(store: Store, clock: FakeClock, planner: PlannerWorker, pending: int) -> None:
    """The queue's depth answers `pending`, then a planner round, a second later."""
    await answer(store, "queue/depth", {"pending": pending})
    clock.advance(1)
    await planner.run_round()


async def _sessions(store: Store) -> list[AnalysisSession]:
    """The rules sessions, oldest first."""
    newest_first = await store.planner.list_sessions(limit=100)
    return [s for s in reversed(newest_first) if s.planner == "rules"]


async def test_the_first_rule_that_holds_proposes_its_action(
    store: Store, clock: FakeClock
) -> None:
    await _queue(store, clock, SLOW, FAST, Rule("true", RuleAction(ActionKind.BASELINE)))
    await answer(store, "queue/depth", {"pending": 480})

    await make_planner(store, FreshnessAnalyst(), clock).run_round()

    [proposal] = await store.planner.list_proposals()
    assert (proposal.kind, proposal.status, proposal.interval_seconds, proposal.ttl_seconds) == (
        ProposalKind.INTERVAL,
        ProposalStatus.APPLIED,
        3,
        DEFAULT_RULE_TTL_SECONDS,
    )
    assert proposal.reason == (
        "proposed by rule 2 of queue/processor: depth.body.pending > 200 = true"
    )
    assert proposal.proposed_by == "rules"
    processor = await store.catalog.get_endpoint("queue/processor")
    assert processor.interval_hint is not None
    assert processor.interval_hint.interval_seconds == 3
    [session] = await _sessions(store)
    assert session.status is SessionStatus.EVALUATED
    assert proposal.session_id == session.id
    assert [(e.number, e.value, e.outcome) for e in session.rule_evaluations] == [
        (1, False, RuleOutcome.NOT_HELD),
        (2, True, RuleOutcome.PROPOSED),
    ]
    assert session.rule_evaluations[0].detail == "false (depth.body.pending = 480)"
    assert session.rule_evaluations[1].proposal_id == proposal.id
    assert session.reasoning.startswith("rule 2 held: interval 3s: applied")


async def test_a_rule_that_keeps_holding_proposes_nothing_new_until_its_hint_lapses(
    store: Store, clock: FakeClock
) -> None:
    await _queue(store, clock, FAST)
    planner = make_planner(store, FreshnessAnalyst(), clock)
    await _depth(store, clock, planner, 480)

    await _depth(store, clock, planner, 470)

    assert len(await store.planner.list_proposals()) == 1
    _, second = await _sessions(store)
    [kept] = second.rule_evaluations
    assert (kept.outcome, kept.detail) == (RuleOutcome.IN_FORCE, "already in force: every 3s")
    # Nothing new in the job: the rules are not evaluated again.
    await planner.run_round()
    assert len(await _sessions(store)) == 2

    clock.advance(DEFAULT_RULE_TTL_SECONDS)
    await _depth(store, clock, planner, 460)
    assert [p.status for p in await store.planner.list_proposals()] == [ProposalStatus.APPLIED] * 2


async def test_in_review_a_held_proposal_is_not_proposed_again(
    store: Store, clock: FakeClock
) -> None:
    await _queue(store, clock, FAST, mode=PlannerMode.REVIEW)
    planner = make_planner(store, FreshnessAnalyst(), clock)
    await _depth(store, clock, planner, 480)
    await _depth(store, clock, planner, 470)

    [pending] = await store.planner.list_proposals()
    assert pending.status is ProposalStatus.PENDING
    [kept] = (await _sessions(store))[-1].rule_evaluations
    assert (kept.outcome, kept.detail) == (
        RuleOutcome.IN_FORCE,
        f"proposal {pending.id} waits for review",
    )


async def test_a_rule_that_holds_wins_over_the_built_in_planner(
    store: Store, clock: FakeClock
) -> None:
    # The planner might tighten the processor (its answers change); the rule keeps it slow.
    await _queue(store, clock, SLOW)
    await answer(store, "queue/depth", {"pending": 10})
    await answer(store, "queue/processor", {"processed": 1})
    await answer(store, "queue/processor", {"processed": 2})
    planner = make_planner(store, FreshnessAnalyst(), clock)

    await planner.run_round()
    await planner.run_round()

    proposals = await store.planner.list_proposals()
    assert [p.proposed_by for p in proposals] == ["rules"]
    # The rule spoke for the built-in planner on these runs: not looked at again for nothing.
    assert len(await _sessions(store)) == 1
    builtin = [s for s in await store.planner.list_sessions() if s.planner == "freshness"]
    assert {s.endpoint_id for s in builtin} == {
        (await store.catalog.get_endpoint("queue/depth")).id
    }


async def test_without_a_rule_that_holds_the_built_in_planner_decides(
    store: Store, clock: FakeClock
) -> None:
    """The depth never changes, the processor's answer changes on every call: the built-in
    planner gives the processor the depth's calls."""
    await declare(
        store,
        clock.now(),
        spec("depth", every=10, **CLAMPED),
        spec("processor", every=10, rules=(FAST,), **CLAMPED),
        job="queue",
    )
    for n in range(6):
        await answer(store, "queue/depth", {"pending": 10})
        await answer(store, "queue/processor", {"processed": n})

    await make_planner(store, FreshnessAnalyst(), clock).run_round()

    processor = await store.catalog.get_endpoint("queue/processor")
    [proposal] = await store.planner.list_proposals(endpoint_id=processor.id)
    assert proposal.proposed_by == "freshness"
    assert proposal.interval_seconds is not None and proposal.interval_seconds < 10
    assert proposal.reason.startswith("changes about every")


async def test_rules_are_evaluated_on_every_new_run_of_the_job(
    store: Store, clock: FakeClock
) -> None:
    """The analyst looks again when it said (the built-in planner: in three periods, at least
    a dwell); the rules do not wait for it."""
    await _queue(store, clock, FAST)
    planner = make_planner(store, FreshnessAnalyst(), clock)
    await _depth(store, clock, planner, 10)

    await _depth(store, clock, planner, 480)

    [proposal] = await store.planner.list_proposals()
    assert proposal.interval_seconds == 3
    processor = await store.catalog.get_endpoint("queue/processor")
    planners = [s.planner for s in await store.planner.list_sessions(processor.id)]
    assert sorted(planners) == ["freshness", "rules", "rules"]


async def test_a_rule_that_cannot_be_evaluated_is_recorded_counted_and_passed_over(
    store: Store, clock: FakeClock
) -> None:
    telemetry = PrometheusTelemetry()
    missing = Rule("depth.body.missing > 1", RuleAction(ActionKind.RUN_NOW))
    # Stored without the checks of apply (a text an older version let through).
    looping = Rule("depth.body.items.all(x, x > 0)", RuleAction(ActionKind.RUN_NOW))
    await _queue(store, clock, missing, looping, FAST)
    planner = make_planner(store, FreshnessAnalyst(), clock, telemetry=telemetry)

    await _depth(store, clock, planner, 480)

    [session] = await _sessions(store)
    absent, refused, fired = session.rule_evaluations
    assert (absent.outcome, absent.value) == (RuleOutcome.ERROR, None)
    assert "missing" in absent.detail
    assert (refused.outcome, refused.value) == (RuleOutcome.ERROR, None)
    assert "all() is not allowed" in refused.detail
    assert fired.outcome is RuleOutcome.PROPOSED
    assert session.tool_errors == 2
    assert (
        telemetry.registry.get_sample_value(
            "cronpilot_rule_evaluations_total",
            {"job": "queue", "endpoint": "processor", "outcome": "error"},
        )
        == 2
    )
    assert [p.interval_seconds for p in await store.planner.list_proposals()] == [3]


async def test_run_now_runs_once_each_time_its_rule_begins_to_hold(
    store: Store, clock: FakeClock
) -> None:
    now_rule = Rule("depth.body.pending > 200", RuleAction(ActionKind.RUN_NOW))
    await _queue(store, clock, now_rule)
    planner = make_planner(store, FreshnessAnalyst(), clock)

    for pending in (480, 470, 10, 490):
        await _depth(store, clock, planner, pending)
        processor = await store.catalog.get_endpoint("queue/processor")
        if processor.oneshot_hint is not None:
            await answer(store, "queue/processor", {"processed": 100})

    proposals = await store.planner.list_proposals()
    assert [p.kind for p in proposals] == [ProposalKind.RUN_NOW] * 2
    outcomes = [s.rule_evaluations[0].outcome for s in await _sessions(store)]
    assert outcomes == [
        RuleOutcome.PROPOSED,
        RuleOutcome.IN_FORCE,
        RuleOutcome.NOT_HELD,
        RuleOutcome.PROPOSED,
    ]


async def test_resume_does_not_lift_an_admins_pause_and_baseline_drops_hints(
    store: Store, clock: FakeClock
) -> None:
    resume = Rule("depth.body.pending > 200", RuleAction(ActionKind.RESUME))
    baseline = Rule("true", RuleAction(ActionKind.BASELINE))
    await _queue(store, clock, resume, baseline)
    processor = await store.catalog.get_endpoint("queue/processor")
    await set_pause(store.catalog, processor.id, Pause("maintenance", by="cli:ann@h"), clock.now())
    planner = make_planner(store, FreshnessAnalyst(), clock)

    await _depth(store, clock, planner, 480)

    [kept] = (await _sessions(store))[-1].rule_evaluations
    assert kept.outcome is RuleOutcome.IN_FORCE
    assert kept.detail == "paused by cli:ann@h: an admin's pause is lifted by an admin"
    assert await store.planner.list_proposals() == []

    await set_pause(store.catalog, processor.id, None, clock.now())
    hint = IntervalHint(30, clock.now() + timedelta(hours=1), "by hand")
    await set_hints(store.catalog, processor.id, hint, None, clock.now())
    await _depth(store, clock, planner, 10)

    [proposal] = await store.planner.list_proposals()
    assert (proposal.kind, proposal.status) == (ProposalKind.BASELINE, ProposalStatus.APPLIED)
    processor = await store.catalog.get_endpoint("queue/processor")
    assert processor.interval_hint is None
    assert processor.next_run_source is not ScheduleSource.HINT_INTERVAL
