"""The LLM planner through the real `openai` SDK against a scripted OpenAI-compatible server on
127.0.0.1: tool calls and their mistakes, budgets, retries and outages."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

import pytest

from cronpilot.adapters.llm.openai_client import OpenAIChat
from cronpilot.domain.model import PlannerMode
from cronpilot.domain.planning.planning import AnalysisSession, ProposalStatus, SessionStatus
from cronpilot.planner.session import OUT_OF_TIME, LlmAnalyst
from cronpilot.planner.tools import TOOLS
from cronpilot.planner.worker import CUT_SHORT, PlannerWorker
from tests.integration.planner.builders import T0, answer, declare, make_planner, spec
from tests.support.clock import FakeClock
from tests.support.fake_openai_server import (
    Call,
    Calls,
    Failure,
    FakeOpenAI,
    Hang,
    Raw,
    Slow,
    Step,
    Text,
    submit,
    tool_results,
)
from tests.support.memory_store import MemoryStore

BODY_MARKER = "a long note the brief only sums up: read it through the tools"
API_KEY = "sk-test-never-logged"
READ_SCORE = {"endpoint": "score", "fields": ["fraud_rate"], "limit": None}
FORCED_SUBMIT = {"type": "function", "function": {"name": "submit_analysis"}}


class Sleeps:
    """The retry waits asked for, without waiting; as time passing on `clock`, if given."""

    def __init__(self, clock: FakeClock | None = None) -> None:
        self.asked: list[float] = []
        self._clock = clock

    async def __call__(self, seconds: float) -> None:
        self.asked.append(seconds)
        if self._clock is not None:
            self._clock.advance(seconds)


@asynccontextmanager
async def planner_against(
    script: Sequence[Step],
    sleeps: Sleeps | None = None,
    *,
    timeout: float = 5.0,
    attempts: int = 3,
    max_steps: int = 6,
    max_tokens: int = 100_000,
    clock: FakeClock | None = None,
    grace_seconds: float = 10.0,
    **config: Any,
) -> AsyncIterator[tuple[PlannerWorker, MemoryStore, FakeOpenAI]]:
    clock = clock or FakeClock(T0 + timedelta(seconds=30))
    store = MemoryStore()
    await declare(
        store,
        T0,
        spec("score", every=10, min_interval_seconds=5, max_interval_seconds=120),
        spec("investigator", every=60, min_interval_seconds=10, max_interval_seconds=300),
        description="Flash sale fraud watch.",
        mode=PlannerMode.AUTO,
    )
    await answer(store, "j/score", {"fraud_rate": 0.08, "note": BODY_MARKER})
    await answer(store, "j/investigator", {"investigated": []})
    async with FakeOpenAI(script) as server:
        chat = OpenAIChat(
            model="test-model",
            base_url=server.base_url,
            api_key=API_KEY,
            timeout_seconds=timeout,
            attempts=attempts,
            sleep=sleeps or Sleeps(),
            now=clock.now,
        )
        try:
            analyst = LlmAnalyst(chat, max_steps=max_steps, max_tokens=max_tokens)
            yield (
                make_planner(store, analyst, clock, grace_seconds=grace_seconds, **config),
                store,
                server,
            )
        finally:
            await chat.close()


async def _investigate(planner: PlannerWorker) -> AnalysisSession:
    [session] = await planner.analyse_now("j/investigator")
    return session


def _fraud_rate_policy(request: dict[str, Any]) -> Calls:
    """Reads the sibling's fraud rate, then acts on it."""
    seen = tool_results(request)
    if not seen:
        return Calls([Call("get_response_history", READ_SCORE)])
    return submit(f"fraud_rate is {seen[0]['runs'][0]['fields']['fraud_rate']}")


async def test_a_conversation_with_mistakes_the_model_corrects(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    script: list[Step] = [
        Calls([Call("get_response_history", READ_SCORE)]),
        Calls(
            [
                Call("propose_interval", '{"interval_seconds": 10, "ttl'),
                Call(
                    "propose_interval",
                    {"endpoint": "score", "interval_seconds": 5, "ttl_seconds": 60, "reason": "r"},
                ),
                Call("get_everything", {}),
            ]
        ),
        Text("I think the investigator should run more often."),
        Calls(
            [
                Call(
                    "propose_interval",
                    {"interval_seconds": 10, "ttl_seconds": 600, "reason": "fraud_rate 0.08"},
                )
            ]
        ),
        submit("fraud is above 5%: investigating every 10 s", confidence=0.9, again=300),
    ]
    async with planner_against(script) as (planner, store, server):
        session = await _investigate(planner)

    assert session.status is SessionStatus.SUBMITTED
    assert (session.reasoning, session.confidence) == (
        "fraud is above 5%: investigating every 10 s",
        0.9,
    )
    assert session.next_analysis_at == T0 + timedelta(seconds=330)
    assert session.planner == "llm:test-model"
    assert [(c.name, c.error is not None) for c in session.tool_calls] == [
        ("get_response_history", False),
        ("propose_interval", True),
        ("propose_interval", True),
        ("get_everything", True),
        ("propose_interval", False),
        ("submit_analysis", False),
    ]
    assert session.tool_errors == 4  # three bad calls and one answer without a tool call
    assert session.prompt_tokens == sum(prompt for prompt, _ in server.usage)
    assert session.completion_tokens == sum(done for _, done in server.usage)
    assert session.prompt_tokens > 0
    [proposal] = await store.planner.list_proposals()
    assert (proposal.status, proposal.interval_seconds, proposal.session_id) == (
        ProposalStatus.APPLIED,
        10.0,
        session.id,
    )
    assert proposal.proposed_by == "llm:test-model"
    first = server.requests[0]
    assert BODY_MARKER not in str(first["messages"])
    assert 'fraud_rate=0.08, note="a long note the brief …' in first["messages"][1]["content"]
    assert "Flash sale fraud watch." in first["messages"][1]["content"]
    # The brief sums up every sibling: the tools that read or find the others are not offered.
    assert len(first["tools"]) == len(TOOLS) - 2
    assert first["tool_choice"] == "required"
    assert first["parallel_tool_calls"] is False
    errors = [m["content"] for m in server.requests[2]["messages"] if m["role"] == "tool"]
    assert "arguments are not valid JSON" in errors[1]
    assert "endpoint: Extra inputs are not permitted" in errors[2]
    assert "unknown tool 'get_everything'" in errors[3]
    assert API_KEY not in caplog.text


async def test_the_last_step_is_forced_to_submit() -> None:
    script: list[Step] = [
        Calls([Call("get_response_history", {"fields": []})]),
        Calls([Call("get_response_history", {"fields": []})]),
    ]
    async with planner_against(script, max_steps=2) as (planner, _, server):
        session = await _investigate(planner)

    assert [r["tool_choice"] for r in server.requests] == ["required", FORCED_SUBMIT]
    assert session.status is SessionStatus.EXHAUSTED


async def test_the_token_budget_forces_submit_early() -> None:
    async with planner_against([_fraud_rate_policy, _fraud_rate_policy], max_tokens=10) as (
        planner,
        _,
        server,
    ):
        session = await _investigate(planner)

    assert [r["tool_choice"] for r in server.requests] == ["required", FORCED_SUBMIT]
    assert session.status is SessionStatus.SUBMITTED
    assert session.reasoning == "fraud_rate is 0.08"


async def test_rate_limits_and_server_errors_are_retried_honouring_retry_after() -> None:
    sleeps = Sleeps()
    script: list[Step] = [
        Failure(429, {"Retry-After": "7"}),
        Failure(500),
        _fraud_rate_policy,
        Failure(503),
        _fraud_rate_policy,
    ]
    async with planner_against(script, sleeps, attempts=3) as (planner, _, server):
        session = await _investigate(planner)

    assert session.status is SessionStatus.SUBMITTED
    assert sleeps.asked == [7.0, 2.0, 1.0]
    assert len(server.requests) == 5


async def test_an_unreachable_llm_backs_off_and_leaves_scheduling_alone() -> None:
    sleeps = Sleeps()
    slow = Slow(2.0, submit())
    script: list[Step] = [slow, slow, slow, slow]
    async with planner_against(script, sleeps, timeout=0.2, attempts=2) as (planner, store, server):
        before = await store.catalog.get_endpoint("j/investigator")
        first = await _investigate(planner)
        second = await _investigate(planner)
        after = await store.catalog.get_endpoint("j/investigator")

        assert first.status is second.status is SessionStatus.FAILED
        assert first.error == "the LLM is unavailable: the LLM server did not answer in time"
        assert (len(server.requests), sleeps.asked) == (4, [1.0, 1.0])
        assert (after.next_run_at, after.interval_hint) == (before.next_run_at, None)
        state = store.planner.planning.states[after.id]
        assert state.llm_failures == 2
        assert state.retry_at == second.finished_at + timedelta(seconds=60)


async def test_a_slow_llm_session_ends_before_its_lease() -> None:
    """Each answer takes a minute: the session that would run 8 minutes on a 5-minute lease is
    cut short at 4, and recorded (its lease still held) as failed, to back off."""
    clock = FakeClock(T0 + timedelta(seconds=30))

    def slow_reading(_: dict[str, Any]) -> Calls:
        clock.advance(60)
        return Calls([Call("get_response_history", READ_SCORE)])

    async with planner_against(
        [slow_reading] * 8, clock=clock, max_steps=8, planner_lease_seconds=300
    ) as (planner, store, server):
        claim = await store.planner.claim_endpoint("j/investigator", clock.now(), "p1", 300)
        [session] = await planner.analyse(claim, keep_quiet=True)
        state = store.planner.planning.states[claim.endpoint.id]

    assert (session.status, session.error) == (SessionStatus.FAILED, OUT_OF_TIME)
    assert len(server.requests) == 4
    assert session.finished_at == claim.lease_until - timedelta(seconds=60)
    assert state.llm_failures == 1
    assert state.lease_owner is None


async def test_retries_stop_when_their_wait_would_pass_the_session_deadline() -> None:
    clock = FakeClock(T0 + timedelta(seconds=30))
    sleeps = Sleeps(clock)
    script: list[Step] = [Failure(503, {"Retry-After": "60"})] * 6
    async with planner_against(script, sleeps, clock=clock, attempts=6) as (planner, _, server):
        session = await _investigate(planner)

    assert session.status is SessionStatus.FAILED
    assert session.error == (
        "the LLM is unavailable: HTTP 503 from the LLM server, "
        "and no time left for the answer in the session to retry"
    )
    # Failed at 0, 60, 120 and 180 s; a fifth attempt would start at the deadline, 240 s.
    assert (len(server.requests), sleeps.asked) == (4, [60.0, 60.0, 60.0])


async def test_client_errors_are_not_retried() -> None:
    sleeps = Sleeps()
    async with planner_against([Failure(401)], sleeps) as (planner, _, server):
        session = await _investigate(planner)

    assert session.status is SessionStatus.FAILED
    assert session.error == "the LLM is unavailable: HTTP 401 from the LLM server"
    assert (sleeps.asked, len(server.requests)) == ([], 1)


@pytest.mark.parametrize(
    ("reply", "requests_per_session", "error"),
    [
        pytest.param(
            Raw("{'choices': ["), 1, "the LLM server's answer is not valid JSON", id="not-json"
        ),
        pytest.param(
            Raw('{"choices": [{"index": 0, "finish_reason": "stop"}]}'),
            1,
            "the LLM server's answer is not a chat completion",
            id="not-a-completion",
        ),
        pytest.param(
            Text("All looks fine to me."),
            2,
            "the model answered 2 times in a row without calling a tool",
            id="text-only",
        ),
    ],
)
async def test_an_llm_giving_no_usable_answer_backs_off_as_in_an_outage(
    reply: Step, requests_per_session: int, error: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A new run every 5 s makes the endpoints worth a look each round; failed sessions back
    off from 30 s, doubling: in two minutes, sessions at 0, 30 and 90 s for each endpoint, each
    reported in one line without a traceback."""
    caplog.set_level(logging.INFO, logger="cronpilot.planner.worker")
    start = T0 + timedelta(seconds=30)
    clock = FakeClock(start)
    async with planner_against([reply] * 100, clock=clock) as (planner, store, server):
        for _ in range(25):
            await answer(store, "j/score", {"fraud_rate": 0.01})
            await planner.run_round()
            clock.advance(5)
        sessions = await store.planner.list_sessions()
        investigator = await store.catalog.get_endpoint("j/investigator")

        assert len(sessions) == 6
        assert all(s.status is SessionStatus.FAILED for s in sessions)
        assert all(s.error is not None and error in s.error for s in sessions)
        assert sorted({s.started_at - start for s in sessions}) == [
            timedelta(seconds=seconds) for seconds in (0, 30, 90)
        ]
        assert len(server.requests) == 6 * requests_per_session
        state = store.planner.planning.states[investigator.id]
        assert state.llm_failures == 3
        assert state.retry_at == start + timedelta(seconds=90 + 120)
    failures = [
        r for r in caplog.records if r.name == "cronpilot.planner.worker" and r.levelno >= 30
    ]
    assert len(failures) == 6
    assert all(error in record.getMessage() for record in failures)
    assert [record for record in caplog.records if record.exc_info] == []


async def test_stop_cuts_a_hanging_llm_short_after_the_grace_period() -> None:
    """A stop does not wait for an LLM that never answers (timeout times attempts): after the
    grace period the session is cut short, recorded as failed, and the worker returns."""
    async with planner_against([Hang(), Hang()], timeout=3600, grace_seconds=0.2) as (
        planner,
        store,
        server,
    ):
        stop = asyncio.Event()
        running = asyncio.create_task(planner.run(stop))
        async with asyncio.timeout(5):
            await server.until_requests(2)
            stop.set()
            await running
        sessions = await store.planner.list_sessions()

    assert len(sessions) == 2
    assert [s.status for s in sessions] == [SessionStatus.FAILED] * 2
    assert [s.error for s in sessions] == [CUT_SHORT] * 2
