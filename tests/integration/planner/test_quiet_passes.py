"""Quiet passes (issue 21, item 3): a planner pass that proposes nothing and finds nothing new
is counted and moves the endpoint's last look, but leaves no stored session; one whose outcome
matters (a proposal, a rule that begins or stops holding, an error, a failed LLM) is stored."""

from __future__ import annotations

from cronpilot.adapters.metrics import PrometheusTelemetry
from cronpilot.domain.errors import LlmUnavailable
from cronpilot.domain.model import PlannerMode
from cronpilot.domain.planning.planning import AnalysisSession, SessionStatus
from cronpilot.domain.ports import Store
from cronpilot.domain.rules.rules import ActionKind, Rule, RuleAction, RuleOutcome
from cronpilot.domain.schedule.quiet_passes import NEWS_SPACING
from cronpilot.planner.freshness import FreshnessAnalyst
from cronpilot.planner.session import Verdict
from cronpilot.planner.tools import ToolBox
from cronpilot.planner.worker import PlannerWorker
from tests.integration.planner.builders import answer, declare, make_planner, spec
from tests.support.clock import FakeClock

CLAMPED = {"min_interval_seconds": 2.0, "max_interval_seconds": 120.0}
FAST = Rule("depth.body.pending > 200", RuleAction(ActionKind.INTERVAL, interval_seconds=3))


def _quiet(telemetry: PrometheusTelemetry, job: str, endpoint: str, planner: str) -> float:
    labels = {"job": job, "endpoint": endpoint, "planner": planner}
    found = telemetry.registry.get_sample_value("cronpilot_planner_quiet_passes_total", labels)
    return found or 0.0


async def _rules_sessions(store: Store) -> list[AnalysisSession]:
    return [
        s for s in reversed(await store.planner.list_sessions(limit=100)) if s.planner == "rules"
    ]


async def test_an_analysis_that_proposes_nothing_new_is_counted_not_stored(
    store: Store, clock: FakeClock
) -> None:
    telemetry = PrometheusTelemetry()
    await declare(
        store,
        clock.now(),
        spec("a", every=10, **CLAMPED),
        spec("b", every=10, **CLAMPED),
        mode=PlannerMode.REVIEW,
    )
    for n in range(12):
        await answer(store, "j/a", {"same": True})
        await answer(store, "j/b", {"n": n})
    planner = make_planner(store, FreshnessAnalyst(), clock, telemetry=telemetry)
    await planner.run_round()
    stored = await store.planner.list_sessions()
    a = await store.catalog.get_endpoint("j/a")

    for _ in range(3):
        clock.advance(600)
        await answer(store, "j/a", {"same": True})
        await planner.run_round()

    # Each later look wanted the change already waiting for review: nothing new.
    assert await store.planner.list_sessions() == stored
    assert len(await store.planner.list_proposals(endpoint_id=a.id)) == 1
    assert _quiet(telemetry, "j", "a", "freshness") == 3
    assert await store.planner.last_analysed(a.id) == clock.now()


async def test_a_rules_pass_is_stored_only_when_a_rule_begins_or_stops_holding(
    store: Store, clock: FakeClock
) -> None:
    telemetry = PrometheusTelemetry()
    await declare(
        store,
        clock.now(),
        spec("depth", every=5),
        spec("processor", every=10, rules=(FAST,), **CLAMPED),
        job="queue",
    )
    planner = make_planner(store, FreshnessAnalyst(), clock, telemetry=telemetry)

    for pending in (480, 470, 460, 10, 5):
        await answer(store, "queue/depth", {"pending": pending})
        clock.advance(NEWS_SPACING.total_seconds() + 1)
        await planner.run_round()

    outcomes = [s.rule_evaluations[0].outcome for s in await _rules_sessions(store)]
    assert outcomes == [RuleOutcome.PROPOSED, RuleOutcome.NOT_HELD]
    assert _quiet(telemetry, "queue", "processor", "rules") == 3
    processor = await store.catalog.get_endpoint("queue/processor")
    assert await store.planner.last_analysed(processor.id) == clock.now()


async def test_a_rule_that_cannot_be_evaluated_is_stored_once_per_spacing(
    store: Store, clock: FakeClock
) -> None:
    broken = Rule("depth.body.missing > 1", RuleAction(ActionKind.RUN_NOW))
    await declare(
        store,
        clock.now(),
        spec("depth", every=5),
        spec("processor", every=10, rules=(broken,), **CLAMPED),
        job="queue",
    )
    planner = make_planner(store, FreshnessAnalyst(), clock)

    for pending in range(12):
        await answer(store, "queue/depth", {"pending": pending})
        clock.advance(NEWS_SPACING.total_seconds() / 4)
        await planner.run_round()

    # The error again on every pass, stored at most once per `NEWS_SPACING`.
    sessions = await _rules_sessions(store)
    assert [s.rule_evaluations[0].outcome for s in sessions] == [RuleOutcome.ERROR] * 3
    assert sessions[1].started_at - sessions[0].started_at == NEWS_SPACING


class Unreachable:
    name = "llm:test"
    yields_to_rules = False

    async def analyse(self, brief: str, toolbox: ToolBox) -> Verdict:
        raise LlmUnavailable("connection refused")


async def test_a_failed_analysis_is_stored(store: Store, clock: FakeClock) -> None:
    await declare(store, clock.now(), spec("a", every=10))
    await answer(store, "j/a", {"n": 1})

    await make_planner(store, Unreachable(), clock).run_round()

    [session] = await store.planner.list_sessions()
    assert session.status is SessionStatus.FAILED


async def test_run_once_and_the_setting_store_quiet_passes_too(
    store: Store, clock: FakeClock
) -> None:
    await declare(store, clock.now(), spec("a", every=10))
    await answer(store, "j/a", {"ok": False}, status=503)
    quiet: PlannerWorker = make_planner(store, FreshnessAnalyst(), clock)
    await quiet.run_round()
    assert await store.planner.list_sessions() == []

    [once] = await quiet.analyse_now("j/a")

    clock.advance(3600)
    await answer(store, "j/a", {"ok": True})
    watched = make_planner(store, FreshnessAnalyst(), clock, planner_keep_quiet_sessions=True)
    await watched.run_round()
    [kept, earlier] = await store.planner.list_sessions()
    assert (kept.status, earlier.id) == (SessionStatus.SUBMITTED, once.id)


async def test_a_rule_held_back_is_stored_on_the_first_pass_of_its_streak_only(
    store: Store, clock: FakeClock
) -> None:
    patient = Rule(FAST.when, FAST.then, for_seconds=30)
    await declare(
        store,
        clock.now(),
        spec("depth", every=5),
        spec("processor", every=10, rules=(patient,), **CLAMPED),
        job="queue",
    )
    planner = make_planner(store, FreshnessAnalyst(), clock)

    for _ in range(8):
        await answer(store, "queue/depth", {"pending": 480})
        clock.advance(5)
        await planner.run_round()

    # Held back by its `for:` on six passes: the first says so, the five after add nothing.
    outcomes = [s.rule_evaluations[0].outcome for s in await _rules_sessions(store)]
    assert outcomes == [RuleOutcome.PENDING, RuleOutcome.PROPOSED]


async def test_a_rules_pass_that_proposes_nothing_is_stored_once_per_spacing(
    store: Store, clock: FakeClock
) -> None:
    slow = Rule("depth.body.pending < 50", RuleAction(ActionKind.INTERVAL, interval_seconds=60))
    await declare(
        store,
        clock.now(),
        spec("depth", every=5),
        spec("processor", every=10, rules=(FAST, slow), **CLAMPED),
        job="queue",
    )
    planner = make_planner(store, FreshnessAnalyst(), clock, rules_dwell_seconds=3600)

    # A queue that swings on every pass: the rule that holds changes each time, and each
    # one after the first waits for the first one's change to dwell.
    for pending in [480, 10] * int(NEWS_SPACING.total_seconds() / 5):
        await answer(store, "queue/depth", {"pending": pending})
        clock.advance(5)
        await planner.run_round()

    sessions = await _rules_sessions(store)
    assert sessions[0].rule_evaluations[0].outcome is RuleOutcome.PROPOSED
    starts = [s.started_at for s in sessions]
    assert len(starts) == 2
    assert starts[1] - starts[0] >= NEWS_SPACING
