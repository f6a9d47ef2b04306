"""`cronpilot planner eval` with an LLM (issue 13): the scripted server playing a sensible
model, and one that flip-flops out of its clamps, scored on the exams shipped with cronpilot,
never on the configured database; a model that cannot be reached is one error line. The
heuristic and the rules sit them in `test_planner_eval.py`."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable

from cronpilot.harness.exams.catalog import chosen_exams
from cronpilot.harness.exams.evaluation import evaluate
from cronpilot.harness.exams.planners import PlannerChoice
from tests.e2e.conftest import Cli
from tests.e2e.planner_eval import EVAL_TIMEOUT, NAMES, database_bytes
from tests.support.fake_openai_server import Call, Calls, FakeOpenAI, Request, submit
from tests.support.settings import settings_for_tests
from tests.support.use_cases import NEEDS, policy


async def test_an_llm_sits_the_exams_and_the_table_shows_its_scores_and_tokens(
    cli_for: Callable[..., Cli], sqlite_url: str
) -> None:
    before = database_bytes(sqlite_url)
    async with FakeOpenAI(policy(NEEDS)) as server:
        llm = cli_for(
            sqlite_url,
            CRONPILOT_LLM_BASE_URL=server.base_url,
            CRONPILOT_LLM_MODEL="scripted",
            COLUMNS="120",
        )
        done = await asyncio.to_thread(llm, "planner", "eval", timeout=EVAL_TIMEOUT)
    rows = [line.split() for line in done.stdout.splitlines()]
    assert rows[0] == [
        "exam", "planner", "made", "refused", "right", "clamps", "flips", "tokens", "score",
        "fresh", "even", "best",
    ]  # fmt: skip
    by_exam = {row[0]: row for row in rows[1:]}
    assert list(by_exam) == [*NAMES, "all"]
    assert {row[1] for row in rows[1:]} == {"llm:scripted"}
    spent = sum(prompt + completion for prompt, completion in server.usage)
    assert by_exam["all"][7] == f"{spent:,}"
    assert spent > 0
    assert int(by_exam["all"][8].rstrip("%")) >= 90
    assert database_bytes(sqlite_url) == before


def flip_flopper() -> Callable[[Request], Calls]:
    """A model that tightens below the clamps and relaxes past them, turn about, whatever the
    endpoint answered."""
    turns = itertools.count()

    def reply(request: Request) -> Calls:
        if any(m["role"] == "tool" for m in request["messages"]):
            return submit("done", again=1)
        seconds = 1 if next(turns) % 2 else 100_000
        arguments = {"interval_seconds": seconds, "ttl_seconds": 300, "reason": "a hunch"}
        return Calls([Call("propose_interval", arguments)])

    return reply


async def test_the_exams_tell_a_flip_flopping_model_from_a_sensible_one() -> None:
    exams = chosen_exams(["flapping", "queue"])
    scores: dict[str, float] = {}
    for name, model in (("sensible", policy(NEEDS)), ("flip-flopper", flip_flopper())):
        async with FakeOpenAI(model) as server:
            settings = settings_for_tests(llm_base_url=server.base_url, llm_model=name)
            results = await evaluate(settings, [PlannerChoice.LLM], exams, seed=7)
        scores[name] = sum(r.grade.score.value for r in results) / len(results)
        if name == "flip-flopper":
            assert all(r.grade.score.clamps < 1 for r in results)
            assert sum(r.grade.score.oscillations for r in results) > 0
    assert scores["sensible"] > 0.9
    assert scores["flip-flopper"] < 0.5


def test_a_model_that_cannot_be_reached_is_one_error_line_not_a_table_of_zeros(
    cli_for: Callable[..., Cli], sqlite_url: str
) -> None:
    nobody = cli_for(
        sqlite_url, CRONPILOT_LLM_BASE_URL="http://127.0.0.1:9/v1", CRONPILOT_LLM_ATTEMPTS="1"
    )
    done = nobody("planner", "eval", "--exam", "volatile", expect=4)
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        "volatile (120 simulated seconds) by llm…",
        "error: the LLM is unavailable: 2 analyses could not reach it and none did; the last: "
        "could not connect to the LLM server",
    ]
