"""`bench/token_economy.py` measures both ways of giving the model data, from the server's usage:
the tools mode (the query tools of seed 002 restored, decision 0033) costs fewer prompt tokens
per analysis than it did with one query tool, and the break-even body size is printed."""

from __future__ import annotations

import json

import pytest

from bench.token_economy import Measure, break_even_chars, main, report

BILLING_WITH_ONE_QUERY_TOOL = 1_070
"""Prompt tokens per analysis of the tools mode on billing before the query tools were restored
(decision 0031's figures, seed 7)."""
CHANGE_RATE_LINE = 30
"""Prompt tokens of the brief's `Change rate:` line (decision 0048), which the brief of 0031
did not carry: "changes about every 4 min (12 changes seen in 50 calls); every 90 s keeps the
copy fresh 72 % of the time"."""
SUGGESTION_LINE = 50
"""Prompt tokens of the brief's `Suggested interval:` line (decision 0058), which neither
carried: "every 10 s would keep the copy fresh 86% of the time (every 20 s now: 74%), the best
split of 360/h across the job's 2 endpoints"."""


def test_the_restored_tools_cost_fewer_prompt_tokens_than_one_query_tool_did(
    capsys: pytest.CaptureFixture[str],
) -> None:
    main(["--case", "billing", "--json"])

    measures = {m["mode"]: m for m in json.loads(capsys.readouterr().out)}
    assert set(measures) == {"tools", "pasted"}
    tools, pasted = measures["tools"], measures["pasted"]
    assert tools["analyses"] == pasted["analyses"] > 0
    # The brief sums up the newest responses: most analyses need no read round trip.
    assert tools["requests"] <= pasted["requests"] + 1
    per_analysis = tools["prompt_tokens"] / tools["analyses"]
    assert per_analysis < BILLING_WITH_ONE_QUERY_TOOL + CHANGE_RATE_LINE + SUGGESTION_LINE
    assert all(m["prompt_tokens"] > 0 and m["completion_tokens"] > 0 for m in measures.values())
    assert tools["endpoints"] == 2 and tools["body_chars"] > 0


def test_the_break_even_body_size_follows_from_the_measures() -> None:
    # 200 prompt tokens more per analysis with tools; pasting sends 2 requests x 2 bodies per
    # analysis: 4 bodies of 200 more characters each would cost pasting as much (4 chars/token).
    tools = Measure("c", "tools", 10, 20, 12_000, 500, 2, 100.0)
    pasted = Measure("c", "pasted", 10, 20, 10_000, 500, 2, 100.0)

    assert break_even_chars(tools, pasted) == 300
    assert break_even_chars(pasted, tools) == 0
    table = report([tools, pasted])
    assert table.splitlines()[1].split()[-1] == "300"
    assert "break-even" in table
