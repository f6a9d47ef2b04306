"""The console's share of one controller per endpoint and of change rates (decision 0048): the
endpoint page says how often the endpoint changes and what its interval keeps fresh, and the
sessions page says what the planner held back while a rule's hint was in force."""

from __future__ import annotations

from cronpilot.domain.access.access import Scope
from cronpilot.domain.model import PlannerMode
from cronpilot.domain.planning.planning import ProposalDraft, ProposalKind, ProposalStatus
from cronpilot.domain.rules.rule_firing import RULES_PLANNER
from cronpilot.planner.session import Verdict, submitted
from cronpilot.planner.tools import SUBMIT, ToolBox
from cronpilot.usecases.proposals import Proposer
from tests.integration.api.test_console import Console, console
from tests.integration.planner.builders import answer, make_planner
from tests.support.settings import limits_for_tests

__all__ = ["console"]

RULE = "proposed by rule 1 of shop/stock: body.queue > 200 = true"


class Relaxes:
    """A planner that always wants the endpoint every 5 min."""

    @property
    def name(self) -> str:
        return "scripted"

    @property
    def yields_to_rules(self) -> bool:
        return True

    async def analyse(self, brief: str, toolbox: ToolBox) -> Verdict:
        wanted = {"interval_seconds": 300, "ttl_seconds": 3600, "reason": "quiet"}
        await toolbox.call("propose_interval", wanted)
        final = {"reasoning": "quiet", "confidence": 0.9, "next_analysis_in_seconds": 60}
        await toolbox.call(SUBMIT, final)
        return submitted(toolbox)


async def test_the_endpoint_page_says_how_often_it_changes(console: Console) -> None:
    for n in range(12):
        await answer(console.store, "shop/stock", {"queue": n // 3})
    async with console.signed_in(Scope.READ) as (client, _):
        page = await client.get("/console/endpoints/shop/stock")

    assert (
        '<dt>Changes</dt><dd id="changes">changes about every 3.3 min (3 changes seen in 11 '
        "calls); every 1 min keeps the copy fresh 86% of the time</dd>"
    ) in page.text


async def test_the_sessions_page_says_what_a_rule_held_back(console: Console) -> None:
    store, clock = console.store, console.clock
    stock = await store.catalog.get_endpoint("shop/stock")
    planner = make_planner(
        store, Relaxes(), clock, limits=limits_for_tests(max_changes_per_hour=100)
    )
    rule = Proposer(RULES_PLANNER, PlannerMode.AUTO, "s0")
    draft = ProposalDraft(ProposalKind.INTERVAL, RULE, 20.0, ttl_seconds=600)
    made = await planner.desk.propose(draft, stock.id, rule, clock.now())
    assert made.status is ProposalStatus.APPLIED
    for _ in range(3):
        await answer(store, "shop/stock", {"queue": 300})
    clock.advance(60)
    await planner.run_round()

    async with console.signed_in(Scope.READ) as (client, _):
        page = await client.get("/console/sessions")

    assert '<small class="held">held back: held by rule 1 of shop/stock until ' in page.text
