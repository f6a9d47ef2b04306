"""One controller per endpoint (issue 31, decision 0048): a rule whose hint is in force holds
the endpoint, and what the planner would have done meanwhile is recorded as held and
counted."""

from __future__ import annotations

from datetime import timedelta

from cronpilot.domain.model import Endpoint, PlannerMode
from cronpilot.domain.planning.controllers import Controller
from cronpilot.domain.planning.planning import ProposalDraft, ProposalKind, ProposalStatus
from cronpilot.domain.ports import Store
from cronpilot.domain.rules.rule_firing import RULES_PLANNER
from cronpilot.domain.runs.telemetry import NoTelemetry
from cronpilot.planner.freshness import FreshnessAnalyst
from cronpilot.usecases.proposals import Proposer
from tests.integration.planner.builders import answer, declare, make_planner, spec
from tests.support.clock import FakeClock
from tests.support.settings import limits_for_tests

RULE = "proposed by rule 1 of j/a: depth.body.pending > 200 = true"
STEADY = {"queue": 0}
CLAMPS = {"min_interval_seconds": 1, "max_interval_seconds": 60}


class HeldCounter(NoTelemetry):
    def __init__(self) -> None:
        self.held: list[tuple[str, Controller]] = []

    def held_back(self, endpoint: Endpoint, by: Controller) -> None:
        self.held.append((endpoint.ref, by))


async def test_the_planner_waits_while_a_rules_hint_is_in_force(
    store: Store, clock: FakeClock
) -> None:
    """`a` never changes, its sibling `busy` does: the built-in planner would give `a`'s calls
    to `busy`, but not while the rule's 2 s holds `a`."""
    endpoints = await declare(
        store, clock.now(), spec("a", every=2, **CLAMPS), spec("busy", every=2, **CLAMPS)
    )
    a = endpoints["a"]
    telemetry = HeldCounter()
    planner = make_planner(
        store,
        FreshnessAnalyst(),
        clock,
        limits=limits_for_tests(max_changes_per_hour=100),
        telemetry=telemetry,
        planner_keep_quiet_sessions=True,
    )
    rule = Proposer(RULES_PLANNER, PlannerMode.AUTO, "s0")
    draft = ProposalDraft(ProposalKind.INTERVAL, RULE, 2.0, ttl_seconds=600)
    made = await planner.desk.propose(draft, a.id, rule, clock.now())
    assert made.status is ProposalStatus.APPLIED
    until = clock.now() + timedelta(seconds=600)

    clock.advance(21)
    await _answer(store, 12)
    await planner.analyse_now("j/a")

    [session, *_] = await store.planner.list_sessions()
    assert [c.outcome for c in session.tool_calls if c.name == "propose_interval"] == [
        f"not made: held by rule 1 of j/a until {until.isoformat()}"
    ]
    assert telemetry.held == [("j/a", Controller.RULE)]
    assert [p.id for p in await store.planner.list_proposals()] == [made.id]

    # The rule's hint has lapsed: the planner steers.
    clock.advance(600)
    await _answer(store, 12)
    await planner.analyse_now("j/a")
    newest = (await store.planner.list_proposals())[0]
    assert (newest.proposed_by, newest.status) == ("freshness", ProposalStatus.APPLIED)
    assert newest.interval_seconds is not None and newest.interval_seconds > 2


async def _answer(store: Store, times: int) -> None:
    for n in range(times):
        await answer(store, "j/a", STEADY)
        await answer(store, "j/busy", {"queue": n})
