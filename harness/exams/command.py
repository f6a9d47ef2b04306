"""`cronpilot planner eval`: the planner exams, sat by the planners named, scored side by side."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cronpilot.adapters.cli.output import (
    OutputOption,
    add_row,
    new_table,
    note,
    print_data,
    print_table,
)
from cronpilot.adapters.cli.runtime import admin_settings
from cronpilot.harness.exams.freshness import ESTIMATED, Freshness
from cronpilot.harness.exams.planners import PlannerChoice
from cronpilot.harness.exams.scores import Score

if TYPE_CHECKING:
    from cronpilot.harness.exams.catalog import Exam
    from cronpilot.harness.exams.evaluation import Result


def eval_planners(
    planner: Annotated[
        list[PlannerChoice] | None,
        typer.Option(
            "--planner",
            help="Who sits the exams; repeat to compare. Default: the LLM when "
            "CRONPILOT_LLM_BASE_URL or CRONPILOT_LLM_API_KEY is set, else the built-in "
            "freshness planner.",
        ),
    ] = None,
    exam: Annotated[
        list[str] | None,
        typer.Option(
            "--exam",
            help="Only this exam; repeat for more. An unknown name lists the exams.",
        ),
    ] = None,
    seed: Annotated[int, typer.Option(help="The simulator's seed: another story.")] = 7,
    output: OutputOption = None,
) -> None:
    """Score planners on the exams shipped with cronpilot: each tells a story on the endpoint
    simulator (a fake clock, a database of its own) and grades what the planner proposed:
    the right direction at the right time, within the clamps, no flip-flopping; the tokens
    an LLM spent. Nothing touches the configured database.

    Columns: made (proposals), refused (by the guardrails), right (the share of changes in
    the direction the story wanted and of stretches that needed one met), clamps (the share
    within bounds), flips (reversals the story gave no reason for), tokens, score (right x
    clamps / (1 + flips)); fresh (the mean share of the time the calls kept the exam's
    endpoints' copies fresh, their change rates estimated from the exam's runs), even and best
    (as many calls spread evenly, and split best); the `all` row's score and freshness are
    the means of the exams'."""
    # Imported here: the simulator, the HTTP client and the store, for this command only.
    from cronpilot.harness.exams.catalog import chosen_exams
    from cronpilot.harness.exams.evaluation import default_planner, evaluate

    settings = admin_settings()
    exams = chosen_exams(exam or [])
    planners = list(dict.fromkeys(planner or [default_planner(settings)]))

    def starting(exam: Exam, planner: PlannerChoice) -> None:
        note(f"{exam.name} ({exam.seconds} simulated seconds) by {planner}…")

    def taken(result: Result) -> None:
        grade = result.grade
        failed = f" ({grade.failed} of {grade.analyses} analyses failed)" if grade.failed else ""
        note(f"{grade.exam} by {result.planner}: {grade.score.value:.0%}{failed}")

    results = asyncio.run(
        evaluate(settings, planners, exams, seed=seed, starting=starting, taken=taken)
    )
    if output:
        print_data(output, [_view(result) for result in results])
        return
    table = new_table(
        "exam", "planner", "made", "refused", "right", "clamps", "flips", "tokens", "score",
        "fresh", "even", "best",
    )  # fmt: skip
    for result in results:
        grade = result.grade
        cells = _cells(grade.score, _tokens(result))
        add_row(table, grade.exam, result.planner, *cells, *_fresh([grade.freshness]))
    for name in dict.fromkeys(result.planner for result in results):
        mine = [result for result in results if result.planner == name]
        mean = sum(result.grade.score.value for result in mine) / len(mine)
        total = sum((result.grade.score for result in mine), Score())
        cells = _cells(total, sum(_tokens(result) for result in mine))
        fresh = _fresh([result.grade.freshness for result in mine])
        add_row(table, "all", name, *cells[:-1], f"{mean:.0%}", *fresh)
    print_table(table)
    note(f"freshness {ESTIMATED}")


def _tokens(result: Result) -> int:
    return result.grade.prompt_tokens + result.grade.completion_tokens


def _cells(score: Score, tokens: int) -> tuple[str, ...]:
    return (
        str(score.proposals),
        str(score.refused),
        f"{score.direction:.0%}",
        f"{score.clamps:.0%}",
        str(score.oscillations),
        f"{tokens:,}",
        f"{score.value:.0%}",
    )


def _fresh(measured: Sequence[Freshness | None]) -> tuple[str, ...]:
    """The mean reached, even and best freshness of the exams measured; `-` for none."""
    known = [f for f in measured if f is not None]
    if not known:
        return ("-",) * 3
    means = (sum(getattr(f, name) for f in known) / len(known) for name in _SPLITS)
    return tuple(f"{mean:.0%}" for mean in means)


_SPLITS = ("reached", "even", "best")


def _freshness_view(measured: Freshness | None) -> dict[str, Any] | None:
    if measured is None:
        return None
    view: dict[str, Any] = {name: round(getattr(measured, name), 4) for name in _SPLITS}
    changed = round(measured.changed, 4)
    return {**view, "endpoints": measured.endpoints, "calls": measured.calls,
            "changed": changed, "how": ESTIMATED}  # fmt: skip


def _view(result: Result) -> dict[str, Any]:
    grade, score = result.grade, result.grade.score
    return {
        "exam": grade.exam,
        "planner": result.planner,
        "score": round(score.value, 4),
        "direction": round(score.direction, 4),
        "clamps": round(score.clamps, 4),
        "oscillations": score.oscillations,
        "proposals": score.proposals,
        "judged": score.judged,
        "right": score.right,
        "needs": score.needs,
        "met": score.met,
        "refused": score.refused,
        "analyses": grade.analyses,
        "failed_analyses": grade.failed,
        "prompt_tokens": grade.prompt_tokens,
        "completion_tokens": grade.completion_tokens,
        "freshness": _freshness_view(grade.freshness),
        "seconds": round(result.seconds, 2),
    }
