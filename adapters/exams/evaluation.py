"""Which planners sit which exams: each exam on a SQLite database of its own in a temporary
folder (never the configured database), the LLM the settings name for `llm`."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path

from cronpilot.adapters.bootstrap import build_chat_model, planner_config
from cronpilot.adapters.clock import SystemClock
from cronpilot.adapters.exams.catalog import Exam
from cronpilot.adapters.exams.planners import PlannerChoice
from cronpilot.adapters.exams.runner import Grade, RulesOnly, exam_config, grade, sit
from cronpilot.adapters.settings import Settings
from cronpilot.domain.errors import InvalidConfig, LlmUnavailable
from cronpilot.planner.heuristic import HeuristicAnalyst
from cronpilot.planner.session import Analyst, LlmAnalyst

_UNAVAILABLE = str(LlmUnavailable(""))


@dataclass(frozen=True, slots=True)
class Result:
    planner: str
    """As proposals name it: `heuristic`, `rules`, `llm:<model>`."""
    grade: Grade
    seconds: float
    """Wall-clock time the exam took."""


def default_planner(settings: Settings) -> PlannerChoice:
    """The planner `cronpilot planner` would run: the LLM when one is configured."""
    return PlannerChoice.LLM if settings.llm_configured else PlannerChoice.HEURISTIC


async def evaluate(
    settings: Settings,
    planners: Sequence[PlannerChoice],
    exams: Sequence[Exam],
    *,
    seed: int,
    taken: Callable[[Result], None] = lambda _: None,
) -> list[Result]:
    """Every planner sits every exam; `taken` hears of each result as it comes."""
    if PlannerChoice.LLM in planners and not settings.llm_configured:
        raise InvalidConfig(
            "CRONPILOT_LLM_BASE_URL",
            "the llm planner needs a model: set CRONPILOT_LLM_BASE_URL (and CRONPILOT_LLM_MODEL) "
            "or CRONPILOT_LLM_API_KEY",
        )
    config = exam_config(planner_config(settings))
    results: list[Result] = []
    async with AsyncExitStack() as resources:
        folder = Path(resources.enter_context(tempfile.TemporaryDirectory(prefix="cronpilot-")))
        for planner in planners:
            analyst = _analyst(planner, settings, resources)
            name = "rules" if planner is PlannerChoice.RULES else analyst.name
            for exam in exams:
                started = time.perf_counter()
                url = f"sqlite+aiosqlite:///{folder / f'{exam.name}-{planner}.db'}"
                sat = await sit(
                    exam, url, analyst, config, rules=planner is PlannerChoice.RULES, seed=seed
                )
                try:
                    graded = await grade(sat)
                finally:
                    await sat.store.close()
                _check_answered(graded)
                result = Result(name, graded, time.perf_counter() - started)
                results.append(result)
                taken(result)
    return results


def _check_answered(graded: Grade) -> None:
    """Stop when the model answered no analysis of an exam: the scores of a model that cannot
    be reached (a wrong URL, a missing key) would read as a planner that chose to do nothing."""
    if graded.analyses and graded.failed == graded.analyses:
        reason = (graded.error or "").removeprefix(_UNAVAILABLE)
        raise LlmUnavailable(
            f"all {graded.failed} analyses of exam {graded.exam} failed; the last: {reason}"
        )


def _analyst(planner: PlannerChoice, settings: Settings, resources: AsyncExitStack) -> Analyst:
    if planner is PlannerChoice.HEURISTIC:
        return HeuristicAnalyst()
    if planner is PlannerChoice.RULES:
        return RulesOnly()
    # Retries wait in real time: the exam's clock stands still while the planner thinks.
    chat = build_chat_model(settings, SystemClock())
    resources.push_async_callback(chat.close)
    return LlmAnalyst(chat, settings.planner_max_steps, settings.planner_max_tokens)
