"""`cronpilot planner eval` as a user runs it (issue 13): the exams shipped with cronpilot, sat
by the heuristic and the rules, scored side by side, and never on the configured database; by
default, without a model, by the freshness planner, with the freshness its calls kept; a bad
choice is one error line. An LLM sits them in `test_planner_eval_llm.py`."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.e2e.conftest import Cli
from tests.e2e.planner_eval import EVAL_TIMEOUT, NAMES, database_bytes


def _by_exam(results: list[dict[str, Any]], planner: str) -> dict[str, dict[str, Any]]:
    return {r["exam"]: r for r in results if r["planner"] == planner}


def test_ten_exams_and_the_heuristic_and_rules_scored_side_by_side(
    cli_for: Callable[..., Cli], sqlite_url: str
) -> None:
    cli, before = cli_for(sqlite_url), database_bytes(sqlite_url)
    done = cli(
        "planner", "eval", "--planner", "heuristic", "--planner", "rules", "--json",
        timeout=EVAL_TIMEOUT,
    )  # fmt: skip
    results = json.loads(done.stdout)
    heuristic, rules = _by_exam(results, "heuristic"), _by_exam(results, "rules")
    assert list(heuristic) == list(rules) == NAMES
    assert len(NAMES) >= 10
    for result in results:
        right = (result["right"] + result["met"]) / ((result["judged"] + result["needs"]) or 1)
        assert result["direction"] == round(right if result["judged"] + result["needs"] else 1, 4)
        expected = result["direction"] * result["clamps"] / (1 + result["oscillations"])
        assert result["score"] == pytest.approx(expected, abs=1e-3)
        assert result["analyses"] > 0
        assert result["prompt_tokens"] == result["completion_tokens"] == 0
    # The heuristic reads only its own endpoint's answers: it cannot know that a fetch found
    # records, whereas the rules read the sibling.
    assert (heuristic["etl"]["needs"], heuristic["etl"]["met"]) == (4, 0)
    assert rules["etl"]["score"] == 1.0
    # Once the learner has marked the timestamp and the id as volatile, identical answers relax
    # the heuristic; no rule says anything about that report.
    assert heuristic["volatile"]["score"] == 1.0
    assert (rules["volatile"]["proposals"], rules["volatile"]["score"]) == (0, 0.0)
    assert heuristic["flapping"]["oscillations"] == 0
    # Progress goes to stderr, the results alone to stdout; the configured database untouched.
    assert "flash-sale by heuristic" in done.stderr
    assert database_bytes(sqlite_url) == before


def test_bad_choices_are_one_error_line(cli_for: Callable[..., Cli], sqlite_url: str) -> None:
    cli = cli_for(sqlite_url)
    unknown = cli("planner", "eval", "--exam", "nope", expect=2)
    assert unknown.stderr.splitlines() == [
        "error: --exam: no exam 'nope'; the exams are " + ", ".join(NAMES)
    ]
    no_model = cli("planner", "eval", "--planner", "llm", expect=2)
    assert "CRONPILOT_LLM_BASE_URL" in no_model.stderr.splitlines()[0]
    assert len(no_model.stderr.splitlines()) == 1


def test_without_a_model_the_freshness_planner_sits_them_and_freshness_is_shown(
    cli_for: Callable[..., Cli], sqlite_url: str
) -> None:
    cli = cli_for(sqlite_url)
    done = cli("planner", "eval", "--exam", "sibling-failing", "--json", timeout=EVAL_TIMEOUT)
    [result] = json.loads(done.stdout)
    assert result["planner"] == "freshness"
    fresh = result["freshness"]
    # Both endpoints answered; their rates estimated from the exam's own runs, as said.
    assert fresh["endpoints"] == 2
    assert fresh["calls"] > 0
    assert 0 < fresh["changed"] < 1
    assert all(0 <= fresh[name] <= 1 for name in ("reached", "even", "best"))
    assert fresh["best"] >= fresh["even"]
    assert "simulator keeps no change times" in fresh["how"]
    table = cli("planner", "eval", "--exam", "volatile", timeout=EVAL_TIMEOUT)
    assert table.stdout.split("\n")[0].split()[-3:] == ["fresh", "even", "best"]
    # A report that never changes is always fresh, however it is called.
    assert table.stdout.split("\n")[1].split()[-3:] == ["100%"] * 3
    assert "freshness estimated from the exam's runs" in table.stderr
