"""What real OpenAI-compatible servers send, through the real `openai` SDK against the scripted
server: vLLM's, Ollama's and llama.cpp's ways of writing a tool call, and servers that refuse or
ignore `tool_choice`. Whatever the dialect, the call is run, and re-checked, as any other."""

from __future__ import annotations

import json
from typing import Any

import pytest

from cronpilot.domain.planning.planning import SessionStatus
from cronpilot.planner.session import NUDGE
from tests.integration.test_openai_planner import _investigate, planner_against
from tests.support.fake_openai_server import Call, Calls, Failure, Reply, Step, Text, submit

SUBMITTED = {"reasoning": "read as a call", "confidence": 0.8, "next_analysis_in_seconds": 60}
AS_HERMES = {"name": "submit_analysis", "arguments": SUBMITTED}


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param(Text(f"<tool_call>\n{json.dumps(AS_HERMES)}\n</tool_call>"), id="tagged"),
        pytest.param(Text(json.dumps(AS_HERMES)), id="bare-json-object"),
        pytest.param(
            Text(json.dumps({"name": "submit_analysis", "parameters": SUBMITTED})),
            id="llama-parameters",
        ),
        pytest.param(Text(f"```json\n{json.dumps([AS_HERMES])}\n```"), id="fenced-list"),
        pytest.param(
            Calls([Call("submit_analysis", json.dumps(json.dumps(SUBMITTED)))]),
            id="double-encoded-arguments",
        ),
        pytest.param(Calls([Call("submit_analysis", SUBMITTED)], ids=False), id="no-call-id"),
    ],
)
async def test_a_tool_call_in_any_servers_dialect_is_run(reply: Step) -> None:
    async with planner_against([reply]) as (planner, _, server):
        session = await _investigate(planner)

    assert session.status is SessionStatus.SUBMITTED
    assert (session.reasoning, session.confidence) == ("read as a call", 0.8)
    assert (len(server.requests), session.tool_errors) == (1, 0)


async def test_calls_without_ids_get_one_that_their_answers_name() -> None:
    script: list[Step] = [
        Calls([Call("get_response_history", {"fields": []})], ids=False),
        Calls([Call("submit_analysis", SUBMITTED)], ids=False),
    ]
    async with planner_against(script) as (planner, _, server):
        session = await _investigate(planner)

    messages = server.requests[1]["messages"]
    [asked] = [m for m in messages if m["role"] == "assistant"]
    [answered] = [m for m in messages if m["role"] == "tool"]
    assert session.status is SessionStatus.SUBMITTED
    assert answered["tool_call_id"] == asked["tool_calls"][0]["id"]
    assert answered["tool_call_id"]


async def test_a_call_in_the_text_is_still_checked_as_any_call() -> None:
    too_sure = {**SUBMITTED, "confidence": 3}
    script: list[Step] = [
        Text(json.dumps({"name": "submit_analysis", "arguments": too_sure})),
        submit("corrected"),
    ]
    async with planner_against(script) as (planner, _, _server):
        session = await _investigate(planner)

    assert [(c.name, c.error is not None) for c in session.tool_calls] == [
        ("submit_analysis", True),
        ("submit_analysis", False),
    ]
    assert session.reasoning == "corrected"


async def test_a_server_refusing_tool_choice_required_is_asked_with_auto_from_then_on() -> None:
    """As llama.cpp builds without tool-choice support do: a 400 for anything but auto."""

    def only_auto(request: dict[str, Any]) -> Reply:
        return submit("auto it is") if request["tool_choice"] == "auto" else Failure(400)

    async with planner_against([only_auto] * 3) as (planner, _, server):
        first = await _investigate(planner)
        second = await _investigate(planner)

    assert first.status is second.status is SessionStatus.SUBMITTED
    assert [r["tool_choice"] for r in server.requests] == ["required", "auto", "auto"]
    assert all(r["parallel_tool_calls"] is False for r in server.requests)
    assert all(tool["function"]["strict"] is True for tool in server.requests[0]["tools"])


async def test_a_server_ignoring_tool_choice_is_nudged_once() -> None:
    """As Ollama does: `tool_choice` is not honoured, and the model writes prose first."""
    script: list[Step] = [Text("The investigator looks fine to me."), submit("nudged")]
    async with planner_against(script) as (planner, _, server):
        session = await _investigate(planner)

    assert session.status is SessionStatus.SUBMITTED
    assert server.requests[1]["messages"][-1] == {"role": "user", "content": NUDGE}
    assert session.tool_errors == 1
