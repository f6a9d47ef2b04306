"""The planner exams side by side: the freshness planner, the heuristic, the rules and the
scripted model of the tests (`tests/support/use_cases.py`, a sensible policy through the real
`openai` SDK, not a real LLM) sit every exam of `cronpilot planner eval` in one run; a Markdown
table of scores and freshness beside the even and best splits of the same calls (and the
scripted model's tokens) per exam. A real model sits the same exams with `cronpilot planner
eval --planner llm` and `CRONPILOT_LLM_BASE_URL`.

    python -m bench.planner_exams [--seed 7]
"""

from __future__ import annotations

import argparse
import asyncio
import platform
from collections.abc import Sequence
from datetime import UTC, datetime

from cronpilot.harness.exams.catalog import EXAMS
from cronpilot.harness.exams.evaluation import Result, evaluate
from cronpilot.harness.exams.freshness import ESTIMATED
from cronpilot.harness.exams.planners import PlannerChoice
from tests.support.fake_openai_server import FakeOpenAI
from tests.support.settings import settings_for_tests
from tests.support.use_cases import NEEDS, policy

PLANNERS = (
    PlannerChoice.FRESHNESS,
    PlannerChoice.HEURISTIC,
    PlannerChoice.RULES,
    PlannerChoice.LLM,
)


async def sit_all(seed: int) -> list[Result]:
    async with FakeOpenAI(policy(NEEDS)) as server:
        settings = settings_for_tests(llm_base_url=server.base_url, llm_model="scripted")
        return await evaluate(settings, PLANNERS, EXAMS, seed=seed)


def _cell(result: Result) -> str:
    score = result.grade.score
    flips = f", {score.oscillations} flips" if score.oscillations else ""
    fresh = result.grade.freshness
    kept = (
        ""
        if fresh is None
        else f"; fresh {fresh.reached:.0%} / {fresh.even:.0%} / {fresh.best:.0%}"
    )
    return f"{score.value:.0%} ({score.proposals} made{flips}{kept})"


def report(results: Sequence[Result], seed: int) -> str:
    planners = list(dict.fromkeys(r.planner for r in results))
    cell = {(r.grade.exam, r.planner): r for r in results}
    lines = [
        f"`python -m bench.planner_exams --seed {seed}`, {datetime.now(UTC):%Y-%m-%d}, "
        f"{platform.python_implementation()} {platform.python_version()}",
        "",
        "| exam | " + " | ".join(planners) + " | tokens (scripted) |",
        "| --- | " + " | ".join("---:" for _ in planners) + " | ---: |",
    ]
    for exam in EXAMS:
        row = [_cell(cell[exam.name, planner]) for planner in planners]
        llm = cell[exam.name, planners[-1]].grade
        tokens = llm.prompt_tokens + llm.completion_tokens
        lines.append(f"| {exam.name} | " + " | ".join(row) + f" | {tokens:,} |")
    means = []
    for planner in planners:
        mine = [r.grade.score.value for r in results if r.planner == planner]
        means.append(f"**{sum(mine) / len(mine):.0%}**")
    spent = sum(
        r.grade.prompt_tokens + r.grade.completion_tokens
        for r in results
        if r.planner == planners[-1]
    )
    lines.append("| mean | " + " | ".join(means) + f" | {spent:,} |")
    lines += ["", f"fresh: reached / even split / best split, {ESTIMATED}"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=7, help="the simulator's seed")
    arguments = parser.parse_args(argv)
    print(report(asyncio.run(sit_all(arguments.seed)), arguments.seed))


if __name__ == "__main__":
    main()
