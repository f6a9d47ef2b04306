"""`bench/token_economy.py` measures both ways of giving the model data, from the server's usage."""

from __future__ import annotations

import json

import pytest

from bench.token_economy import main


def test_the_bench_measures_tools_against_pasted_responses(
    capsys: pytest.CaptureFixture[str],
) -> None:
    main(["--case", "billing", "--json"])

    measures = {m["mode"]: m for m in json.loads(capsys.readouterr().out)}
    assert set(measures) == {"tools", "pasted"}
    tools, pasted = measures["tools"], measures["pasted"]
    assert tools["analyses"] == pasted["analyses"] > 0
    # Tools cost a round trip per read; pasting answers in the first request.
    assert tools["requests"] > pasted["requests"] >= pasted["analyses"]
    assert all(m["prompt_tokens"] > 0 and m["completion_tokens"] > 0 for m in measures.values())
