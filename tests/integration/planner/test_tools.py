"""The planner's tools: scoping, projection, truncation, validation, recording."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta
from typing import Any

import jsonschema
import pytest

from cronpilot.domain.model import Endpoint, PlannerMode
from cronpilot.domain.planning.planning import AnalysisClaim
from cronpilot.planner.tools import TOOLS, ToolBox, ToolContext, ToolKind
from cronpilot.usecases.proposals import ProposalDesk, Proposer
from tests.integration.planner.builders import answer, declare, spec
from tests.support.clock import FakeClock
from tests.support.memory_store import MemoryStore
from tests.support.settings import limits_for_tests


async def _toolbox(clock: FakeClock, max_body_chars: int = 2000) -> tuple[ToolBox, MemoryStore]:
    store = MemoryStore()
    endpoints = await declare(
        store,
        clock.now(),
        spec("score", every=10, min_interval_seconds=5, max_interval_seconds=60),
        spec("investigator", every=30),
    )
    await declare(store, clock.now(), spec("secret"), job="other")
    for rate in (0.01, 0.07):
        await answer(store, "j/score", {"fraud_rate": rate, "orders": [{"id": 1}, {"id": 2}]})
    await answer(store, "j/investigator", {"report": "x" * 5000})
    score = await store.catalog.get_endpoint("j/score")
    return await _box(store, score, endpoints, clock, max_body_chars), store


async def _box(
    store: MemoryStore,
    endpoint: Endpoint,
    siblings: dict[str, Endpoint],
    clock: FakeClock,
    max_body_chars: int = 2000,
) -> ToolBox:
    """Tools analysing `endpoint` in auto mode."""
    context = ToolContext(
        claim=AnalysisClaim(endpoint, PlannerMode.AUTO, clock.now() + timedelta(minutes=5)),
        siblings=siblings,
        store=store,
        desk=ProposalDesk(store.unit_of_work, store.reading, None, limits_for_tests()),
        proposer=Proposer("llm:test", PlannerMode.AUTO, "s1"),
        now=clock.now,
        max_body_chars=max_body_chars,
    )
    return ToolBox(context)


def test_every_tool_has_a_json_schema_and_the_registry_is_complete() -> None:
    assert {name: tool.kind for name, tool in TOOLS.items()} == {
        "get_latest_response": ToolKind.QUERY,
        "get_response_history": ToolKind.QUERY,
        "get_sibling_latest_responses": ToolKind.QUERY,
        "find_endpoints": ToolKind.QUERY,
        "propose_interval": ToolKind.ACTION,
        "propose_next_time": ToolKind.ACTION,
        "pause_until": ToolKind.ACTION,
        "submit_analysis": ToolKind.FINAL,
    }
    for tool in TOOLS.values():
        definition: Any = tool.definition()
        jsonschema.Draft202012Validator.check_schema(definition["function"]["parameters"])


@pytest.mark.parametrize("name", list(TOOLS))
def test_every_tool_definition_is_strict(name: str) -> None:
    """What OpenAI's `strict: true` and the grammars of vLLM and llama.cpp accept: a closed
    object, every property required, an optional one nullable; bounds, formats and defaults
    stay on our side."""
    function: Any = TOOLS[name].definition()["function"]
    parameters = function["parameters"]

    assert function["strict"] is True
    assert parameters["type"] == "object"
    assert parameters["additionalProperties"] is False
    assert parameters["required"] == list(parameters["properties"])
    for shown in parameters["properties"].values():
        assert set(shown) <= {"type", "items", "description"}, shown
    optional = [n for n, f in TOOLS[name].arguments.model_fields.items() if not f.is_required()]
    assert all("null" in parameters["properties"][n]["type"] for n in optional)


async def test_null_means_the_default_and_bounds_are_checked_on_our_side(
    clock: FakeClock,
) -> None:
    box, _ = await _toolbox(clock)
    nulls = {"endpoint": None, "fields": None, "limit": None}

    history = await box.call("get_response_history", nulls)
    too_many = await box.call("get_response_history", {**nulls, "limit": 51})

    assert history.error is None
    assert len(history.data["runs"]) == 2
    assert too_many.error is not None and "limit" in too_many.error


async def test_the_query_tool_reads_siblings_with_projection(clock: FakeClock) -> None:
    box, _ = await _toolbox(clock)

    latest = await box.call("get_latest_response", {"fields": ["fraud_rate", "orders[*].id"]})
    sibling = await box.call("get_latest_response", '{"endpoint": "investigator", "fields": []}')
    history = await box.call("get_response_history", {"limit": 2, "fields": ["x"]})

    assert latest.error is None
    run = latest.data["run"]
    assert run["fields"] == {"fraud_rate": 0.07, "orders[*].id": [1, 2]}
    assert "body" not in run
    assert sibling.data["endpoint"] == "investigator"
    assert "body" not in sibling.data["run"]
    assert [run["fields"] for run in history.data["runs"]] == [{"_missing": ["x"]}] * 2
    assert box.calls[1].arguments == {"endpoint": "investigator", "fields": []}
    assert box.calls[0].result_chars == len(latest.content)


async def test_projections_read_the_one_path_syntax_positions_written_either_way(
    clock: FakeClock,
) -> None:
    box, _ = await _toolbox(clock)
    paths = ["orders[1].id", "orders.0.id", "orders[1]", "orders[5].id"]

    latest = await box.call("get_response_history", {"fields": paths})
    refused = await box.call("get_response_history", {"fields": ["orders[0] id"]})

    assert latest.data["runs"][0]["fields"] == {
        "orders[1].id": 2,
        "orders.0.id": 1,
        "orders[1]": {"id": 2},
        "_missing": ["orders[5].id"],
    }
    assert refused.error == (
        "bad field path 'orders[0] id': keys joined by dots, positions in brackets, e.g. rows[0].id"
    )


async def test_large_bodies_are_truncated_with_a_marker(clock: FakeClock) -> None:
    box, _ = await _toolbox(clock, max_body_chars=100)

    result = await box.call("get_response_history", {"endpoint": "investigator"})

    body = result.data["runs"][0]["body"]
    assert body["_truncated"].startswith("body is 5013 characters; showing the first 100")
    assert len(body["preview"]) == 100
    assert len(result.content) < 600


@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        ("get_response_history", {"endpoint": "secret"}, "is not in job 'j'"),
        ("get_response_history", {"endpoint": "other/secret"}, "is not in job 'j'"),
        ("get_response_history", {"limit": 51}, "limit: Input should be less than or equal"),
        ("get_response_history", {"colour": "red"}, "colour: Extra inputs are not permitted"),
        ("get_response_history", '{"fields": [', "arguments are not valid JSON"),
        ("get_response_history", {"fields": ["a..b"]}, "bad field path"),
        ("drop_table", {}, "unknown tool 'drop_table'"),
        (
            "propose_interval",
            {"endpoint": "investigator", "interval_seconds": 30, "ttl_seconds": 60, "reason": "r"},
            # An action has no endpoint to name: it changes the analysed one only.
            "endpoint: Extra inputs are not permitted",
        ),
        ("propose_interval", {"interval_seconds": 30, "ttl_seconds": 60}, "reason: Field required"),
        (
            "submit_analysis",
            {"reasoning": "x", "confidence": 2, "next_analysis_in_seconds": 5},
            "confidence",
        ),
    ],
)
async def test_mistakes_are_tool_errors_the_model_can_read(
    clock: FakeClock, name: str, arguments: Any, expected: str
) -> None:
    box, store = await _toolbox(clock)

    result = await box.call(name, arguments)

    assert result.error is not None
    assert expected in result.error
    assert json.loads(result.content) == {"error": result.error}
    assert box.errors == 1
    assert box.calls[-1].error == result.error
    assert box.submitted is None
    assert store.planner.planning.proposals == {}


async def test_actions_become_proposals_and_submit_ends(clock: FakeClock) -> None:
    box, store = await _toolbox(clock)

    interval = await box.call(
        "propose_interval",
        {"interval_seconds": 5, "ttl_seconds": 600, "reason": "fraud up"},
    )
    too_fast = await box.call(
        "propose_interval", {"interval_seconds": 1, "ttl_seconds": 600, "reason": "faster"}
    )
    later = (clock.now() + timedelta(minutes=2)).replace(tzinfo=None).isoformat()
    shot = await box.call(
        "propose_next_time", {"at": later, "ttl_seconds": 600, "reason": "after the sale"}
    )
    done = await box.call(
        "submit_analysis",
        {"reasoning": "fraud is up", "confidence": 0.8, "next_analysis_in_seconds": 300},
    )

    assert interval.data["status"] == "applied"
    assert too_fast.error is None
    assert too_fast.data["status"] == "refused"
    assert too_fast.data["outcome"] == "interval 1s is below the minimum 5s"
    assert shot.data["status"] == "applied"
    endpoint = await store.catalog.get_endpoint("j/score")
    assert endpoint.oneshot_hint is not None
    assert endpoint.oneshot_hint.at == clock.now() + timedelta(minutes=2)
    assert done.data == {"ok": True}
    assert box.submitted is not None
    assert box.submitted.next_analysis_in_seconds == 300
    assert box.errors == 0


async def test_each_call_records_what_it_did(clock: FakeClock) -> None:
    box, _ = await _toolbox(clock)
    pause = {"until": (clock.now() + timedelta(minutes=30)).isoformat(), "reason": "quiet"}
    in_review = ToolBox(replace(box.context, proposer=Proposer("llm:t", PlannerMode.REVIEW)))

    await box.call("get_response_history", {})
    too_fast = await box.call(
        "propose_interval", {"interval_seconds": 1, "ttl_seconds": 60, "reason": "x"}
    )
    paused = await box.call("pause_until", pause)
    again = await box.call("pause_until", pause)
    await box.call("nope", {})
    await box.call(
        "submit_analysis", {"reasoning": "done", "confidence": 0.5, "next_analysis_in_seconds": 30}
    )
    held = await in_review.call("pause_until", {"until": None, "reason": "wake up"})

    ids = [result.data["proposal_id"] for result in (too_fast, paused, held)]
    read, refused, applied, in_force, wrong, submitted = (call.outcome for call in box.calls)
    assert (read, wrong, submitted) == (None, None, "analysis submitted")
    assert box.calls[4].error is not None
    assert refused == (
        f"refused by a guardrail: interval 1s is below the minimum 5s (proposal {ids[0]})"
    )
    assert applied is not None and in_force is not None
    assert applied.startswith("applied: next run ")
    assert applied.endswith(f"(paused) (proposal {ids[1]})")
    # The same pause again is not made again (issue 13): the session records why.
    assert again.data == {"status": "not_made", "outcome": "already in force"}
    assert in_force == "not made: already in force"
    assert in_review.calls[0].outcome == f"held for review as proposal {ids[2]}"


async def test_siblings_latest_responses_and_finding_endpoints_by_intent(clock: FakeClock) -> None:
    box, _ = await _toolbox(clock)

    siblings = await box.call("get_sibling_latest_responses", {"fields": []})
    found = await box.call("find_endpoints", {"intent": "the investigator"})
    refused = await box.call("find_endpoints", {"intent": "   "})

    assert siblings.error is None
    assert list(siblings.data) == ["investigator"]
    assert siblings.data["investigator"]["status"] == "success"
    assert "body" not in siblings.data["investigator"]
    assert found.data["endpoints"][0]["name"] == "investigator"
    assert refused.error is not None and "the query is empty" in refused.error


async def test_finding_endpoints_reads_their_meaning_with_the_workers_embedder(
    clock: FakeClock,
) -> None:
    from cronpilot.adapters.search.embedders import WordLlamaEmbedder

    box, _ = await _toolbox(clock)
    # No word of "detective" is indexed: only the semantic leg can find the investigator.
    words_only = await box.call("find_endpoints", {"intent": "detective"})
    box.context.embedder = WordLlamaEmbedder()
    meaning = await box.call("find_endpoints", {"intent": "detective"})

    assert words_only.data == {"endpoints": []}
    assert meaning.data["endpoints"][0]["name"] == "investigator"


async def test_tools_that_read_siblings_are_offered_only_where_the_brief_left_some_out(
    clock: FakeClock,
) -> None:
    box, _ = await _toolbox(clock)
    offered = {d["function"]["name"] for d in box.definitions()}
    box.context.summed_up = []
    cut = {d["function"]["name"] for d in box.definitions()}
    box.context.summed_up = ["investigator"]
    whole = {d["function"]["name"] for d in box.definitions()}

    assert cut == set(TOOLS)
    assert offered == whole == set(TOOLS) - {"get_sibling_latest_responses", "find_endpoints"}
