"""The LLM planner beside response rules, through the real `openai` SDK against the scripted
OpenAI-compatible server on 127.0.0.1: the model reads the rules in its brief, and a proposal
of its that contradicts a rule that holds is refused by a guardrail, with the rule as reason."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from cronpilot.adapters.llm.openai_client import OpenAIChat
from cronpilot.domain.model import PlannerMode
from cronpilot.domain.planning.planning import ProposalStatus
from cronpilot.domain.rules.rules import ActionKind, Rule, RuleAction
from cronpilot.planner.session import LlmAnalyst
from tests.integration.planner.builders import T0, answer, declare, make_planner, spec
from tests.support.clock import FakeClock
from tests.support.fake_openai_server import Call, Calls, FakeOpenAI, Step, submit
from tests.support.memory_store import MemoryStore

RULE = Rule("score.body.fraud_rate > 0.05", RuleAction(ActionKind.INTERVAL, interval_seconds=10))


async def _watch(fraud_rate: float) -> MemoryStore:
    """A fraud score (the planner leaves it alone) and an investigator with `RULE`; the score
    answered `fraud_rate`."""
    store = MemoryStore()
    await declare(
        store,
        T0,
        spec("score", every=10, planner_mode=PlannerMode.OFF),
        spec(
            "investigator",
            every=60,
            min_interval_seconds=10,
            max_interval_seconds=300,
            rules=(RULE,),
        ),
        mode=PlannerMode.AUTO,
    )
    await answer(store, "j/score", {"fraud_rate": fraud_rate})
    return store


async def _round(store: MemoryStore, script: Sequence[Step]) -> str:
    """One planner round with the scripted model; the brief it was given."""
    clock = FakeClock(T0 + timedelta(seconds=1))
    async with FakeOpenAI(script) as server:
        chat = OpenAIChat(
            model="test-model",
            base_url=server.base_url,
            api_key="sk-test",
            timeout_seconds=5,
            attempts=1,
            sleep=clock.sleep,
            now=clock.now,
        )
        try:
            analyst = LlmAnalyst(chat, max_steps=4, max_tokens=100_000)
            await make_planner(store, analyst, clock).run_round()
        finally:
            await chat.close()
    content: str = server.requests[0]["messages"][1]["content"]
    return content


def _interval(seconds: float) -> Calls:
    arguments = {"interval_seconds": seconds, "ttl_seconds": 600, "reason": "my own view"}
    return Calls([Call("propose_interval", arguments)])


async def test_a_proposal_contradicting_a_rule_that_holds_is_held_back() -> None:
    store = await _watch(0.08)

    brief = await _round(store, [_interval(120), _interval(10), submit("every 10 s it is")])

    assert (
        "rule 1: when score.body.fraud_rate > 0.05 then interval 10s [HOLDS: interval 10s: "
        "applied" in brief
    )
    # Made at one instant: told apart by who proposed what.
    proposals = {
        (p.proposed_by, p.interval_seconds): p for p in await store.planner.list_proposals()
    }
    by_rule = proposals["rules", 10]
    assert by_rule.status is ProposalStatus.APPLIED
    # One controller at a time (decision 0048): while the rule's hint is in force the
    # planner's change is held back, recorded in its session, and no proposal is made.
    assert set(proposals) == {("rules", 10)}
    [session] = [s for s in await store.planner.list_sessions() if s.planner != "rules"]
    outcomes = [c.outcome for c in session.tool_calls]
    assert outcomes[0] is not None
    assert outcomes[0].startswith("not made: held by rule 1 of j/investigator until ")
    assert outcomes[1] == "not made: already in force"


async def test_without_a_rule_that_holds_the_model_decides() -> None:
    store = await _watch(0.01)

    brief = await _round(store, [_interval(120), submit("quiet")])

    assert "[false (score.body.fraud_rate = 0.01)]" in brief
    [proposal] = await store.planner.list_proposals()
    assert (proposal.proposed_by, proposal.status) == ("llm:test-model", ProposalStatus.APPLIED)
