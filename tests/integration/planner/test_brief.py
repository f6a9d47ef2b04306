"""What the model is given before any tool call: the brief sums up the newest responses and
the graph around the endpoint, and it and the tool definitions stay within a token budget,
counted as the token-economy benchmark counts them (`fake_openai_server.tokens`)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from cronpilot.domain.graph.dependencies import with_dependants
from cronpilot.domain.model import PlannerMode, RunStatus, Schedule
from cronpilot.domain.planning.context import dag_context
from cronpilot.domain.planning.planning import AnalysisClaim
from cronpilot.domain.schedule.quiet import QuietWindow
from cronpilot.planner.analysis_context import read_analysis_context
from cronpilot.planner.brief import HEALTH_RUNS, SYSTEM_PROMPT, build_brief, windowed_health
from cronpilot.planner.freshness import suggest
from cronpilot.planner.summary import run_summary, summed_up
from cronpilot.planner.tools import FIND, SIBLINGS, TOOLS, ToolKind
from tests.integration.planner.builders import T0, answer, declare, spec
from tests.support.fake_openai_server import tokens
from tests.support.memory_store import MemoryStore

TOOLS_AND_SYSTEM_BUDGET = 610
"""Tokens every step of an analysis pays before its brief where the brief left no sibling out:
1,475 before issue 13, 615 with one query tool (issue 13), 608 with seed 002's three restored
and `find_endpoints` (issue 24: the actions lost their `endpoint`, the prompt its padding)."""
EVERY_TOOL_BUDGET = 740
"""The same where the brief's budget left siblings out: two more query tools are offered."""
QUERY_TOOLS_BUDGET = 300
"""Every query tool's definition: 691 tokens before issue 13."""


def test_the_tool_definitions_and_system_prompt_stay_within_their_token_budget() -> None:
    definitions = [tool.definition() for tool in TOOLS.values()]
    usual = [t.definition() for t in TOOLS.values() if t.name not in (SIBLINGS, FIND)]
    queries = [tool.definition() for tool in TOOLS.values() if tool.kind is ToolKind.QUERY]

    assert tokens(usual) + tokens(SYSTEM_PROMPT) <= TOOLS_AND_SYSTEM_BUDGET
    assert tokens(definitions) + tokens(SYSTEM_PROMPT) <= EVERY_TOOL_BUDGET
    assert tokens(queries) <= QUERY_TOOLS_BUDGET


async def test_the_brief_sums_up_the_newest_responses_most_related_first() -> None:
    store = MemoryStore()
    specs = with_dependants(
        [spec("audit"), spec("fetch"), spec("zload", schedule=Schedule(), depends_on=("fetch",))]
    )
    await declare(store, T0, *specs, job="etl")
    long_note = "n" * 60
    await answer(store, "etl/fetch", {"records": 40, "note": long_note, "ids": [1, 2, 3]})
    await answer(store, "etl/audit", {"ok": True})
    fetch = await store.catalog.get_endpoint("etl/fetch")
    context = await read_analysis_context(store.reading, fetch, 10)
    claim = AnalysisClaim(fetch, PlannerMode.AUTO, T0 + timedelta(minutes=5))

    brief = build_brief(
        claim,
        job_description="",
        siblings={e.name: e for e in context.endpoints},
        recent=context.recent,
        schema=None,
        now=T0,
        graph=dag_context(fetch, context.endpoints, context.edges, context.latest),
        latest=summed_up(fetch, context, T0, 160),
    )

    newest = brief.split("Newest responses:\n", 1)[1].splitlines()
    # zload depends on fetch: summed up before audit although its name sorts after.
    assert [line.split(":", 1)[0] for line in newest] == ["- fetch", "- zload", "- audit"]
    assert newest[0].endswith(f'records=40, note="{long_note[:22]}…, ids=[3 items]')
    assert newest[1] == "- zload: no run yet"
    assert "Graph: upstream none; downstream zload (dependency, never ran)" in brief
    assert long_note not in brief


async def test_a_summary_says_how_a_run_went_and_cuts_long_lines() -> None:
    store = MemoryStore()
    await declare(store, T0, spec("big"))
    run = await answer(store, "j/big", {f"field_{n}": n for n in range(100)}, status=503)

    line = run_summary(run)
    no_body = run_summary(replace(run, body="plain text"))

    assert line.startswith("12:00:00 failed 503; field_0=0, field_1=1")
    assert line.endswith("…") and len(line) < 300
    assert no_body.endswith('; body "plain text"')


async def test_the_brief_gives_health_by_window_and_names_the_siblings_it_can_read() -> None:
    store = MemoryStore()
    endpoints = await declare(store, T0, spec("a"), spec("zeta"), spec("beta"))
    run = await answer(store, "j/a", {"ok": True})
    now = T0 + timedelta(days=2)
    ok, failed = RunStatus.SUCCESS, RunStatus.FAILED
    aged = [(0.5, ok), (0.9, failed), (2, ok), (3, ok), (10, failed), (30, ok)]
    runs = [replace(run, slot_at=now - timedelta(hours=h), status=s) for h, s in aged]
    claim = AnalysisClaim(endpoints["a"], PlannerMode.AUTO, now)

    brief = build_brief(
        claim, job_description="", siblings=endpoints, recent=[], schema=None, now=now, window=runs
    )

    assert "Health by window: 1h 2 runs 50% ok; 4h 4 runs 75% ok; 24h 5 runs 60% ok" in brief
    assert "siblings: beta, zeta" in brief


async def test_the_brief_names_the_quiet_windows_and_the_next_one() -> None:
    weekend = (QuietWindow(days=(5, 6)), QuietWindow(hours=(12 * 60, 13 * 60), every_seconds=600))
    endpoints = await declare(MemoryStore(), T0, spec("a", quiet=weekend))
    claim = AnalysisClaim(endpoints["a"], PlannerMode.AUTO, T0)

    brief = build_brief(
        claim, job_description="", siblings=endpoints, recent=[], schema=None, now=T0
    )

    assert (
        "Quiet windows (no call in them, whatever is proposed): sat,sun UTC (skip); "
        "every day 12:00-13:00 UTC (every 600s); next 2030-01-07T12:00:00+00:00 to "
    ) in brief


async def test_health_by_window_says_where_the_bounded_read_stopped_short() -> None:
    store = MemoryStore()
    await declare(store, T0, spec("a"))
    run = await answer(store, "j/a", {"ok": True})
    now = T0 + timedelta(days=1)
    every_minute = [replace(run, slot_at=now - timedelta(minutes=n)) for n in range(HEALTH_RUNS)]

    assert windowed_health(every_minute, now) == (
        "1h 61 runs 100% ok; 4h 200+ runs 100% ok; 24h 200+ runs 100% ok"
    )
    assert windowed_health([], now) == "1h no runs; 4h no runs; 24h no runs"


async def test_the_brief_sums_up_the_most_relevant_siblings_until_its_budget_is_spent() -> None:
    store = MemoryStore()
    await declare(
        store,
        T0,
        spec("orders_fetch", description="Fetch new orders"),
        spec("orders_clean", description="Clean the fetched orders"),
        spec("weather", description="Today's weather"),
        spec("stock", description="Stock levels"),
        job="shop",
    )
    for name in ("orders_fetch", "orders_clean", "weather", "stock"):
        await answer(store, f"shop/{name}", {"value": name})
    fetch = await store.catalog.get_endpoint("shop/orders_fetch")
    context = await read_analysis_context(store.reading, fetch, 10)

    roomy = summed_up(fetch, context, T0, 1_000)
    tight = summed_up(fetch, context, T0, 20)
    none = summed_up(fetch, context, T0, 0)

    assert list(roomy)[:2] == ["orders_fetch", "orders_clean"]
    assert set(roomy) == {"orders_fetch", "orders_clean", "weather", "stock"}
    assert list(tight) == ["orders_fetch", "orders_clean"]
    assert list(none) == ["orders_fetch"]


async def test_the_brief_carries_the_estimate_and_the_suggested_intervals_freshness() -> None:
    store = MemoryStore()
    clamps = {"min_interval_seconds": 5, "max_interval_seconds": 3600}
    await declare(store, T0, spec("silent", every=20, **clamps), spec("busy", every=20, **clamps))
    for n in range(12):
        await answer(store, "j/silent", {"n": 0})
        await answer(store, "j/busy", {"n": n // 2})
    endpoints = {e.name: e for e in await store.catalog.list_endpoints("j")}
    busy = endpoints["busy"]
    now = T0 + timedelta(minutes=5)
    suggestion = await suggest(store, busy, endpoints, now)
    assert suggestion is not None
    window = await store.runs.list_runs(busy.id, HEALTH_RUNS)
    claim = AnalysisClaim(busy, PlannerMode.AUTO, now)

    brief = build_brief(
        claim,
        job_description="",
        siblings=endpoints,
        recent=[],
        schema=None,
        now=now,
        window=window,
        suggestion=suggestion,
    )

    assert "Change rate: changes about every 32 s (5 changes seen in 11 calls)" in brief
    assert (
        "Suggested interval: every 10 s would keep the copy fresh 86% of the time "
        "(every 20 s now: 74%), the best split of 360/h across the job's 2 endpoints"
    ) in brief
