"""Which planners sit which exams: each exam on a SQLite database of its own in a temporary
folder (never the configured database), with the default settings but for the LLM's, so that
scores compare across machines and configurations. The exams' databases are copies of one
migrated once: migrating each anew took a fifth of a second of every exam."""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path

from cronpilot.adapters.bootstrap import build_chat_model, planner_config
from cronpilot.adapters.clock import SystemClock
from cronpilot.adapters.settings import Settings
from cronpilot.adapters.sql import upgrade_database
from cronpilot.domain.errors import InvalidConfig, LlmUnavailable
from cronpilot.harness.exams.catalog import Exam
from cronpilot.harness.exams.planners import PlannerChoice
from cronpilot.harness.exams.runner import Grade, RulesOnly, exam_config, grade, sit
from cronpilot.planner.freshness import FreshnessAnalyst
from cronpilot.planner.heuristic import HeuristicAnalyst
from cronpilot.planner.session import Analyst, LlmAnalyst, Verdict
from cronpilot.planner.tools import ToolBox

UNANSWERED_LIMIT = 2
"""Analyses that could not reach the LLM, none having reached it, after which it is taken for
unreachable."""


@dataclass(frozen=True, slots=True)
class Result:
    planner: str
    """As proposals name it: `freshness`, `heuristic`, `rules`, `llm:<model>`."""
    grade: Grade
    seconds: float
    """Wall-clock time the exam took."""


def default_planner(settings: Settings) -> PlannerChoice:
    """The planner `cronpilot planner` would run: the LLM when one is configured."""
    return PlannerChoice.LLM if settings.llm_configured else PlannerChoice.FRESHNESS


def exam_settings(settings: Settings) -> Settings:
    """The defaults, with `settings`' LLM (`CRONPILOT_LLM_*`): the user's limits, backoff or
    history length would make their scores incomparable with anyone else's."""
    llm = {
        name: getattr(settings, name) for name in Settings.model_fields if name.startswith("llm_")
    }
    return Settings.model_construct(**llm)


async def evaluate(
    settings: Settings,
    planners: Sequence[PlannerChoice],
    exams: Sequence[Exam],
    *,
    seed: int,
    starting: Callable[[Exam, PlannerChoice], None] = lambda *_: None,
    taken: Callable[[Result], None] = lambda _: None,
) -> list[Result]:
    """Every planner sits every exam; `starting` and `taken` hear of each as it comes."""
    if PlannerChoice.LLM in planners and not settings.llm_configured:
        raise InvalidConfig(
            "CRONPILOT_LLM_BASE_URL",
            "the llm planner needs a model: set CRONPILOT_LLM_BASE_URL (and CRONPILOT_LLM_MODEL) "
            "or CRONPILOT_LLM_API_KEY",
        )
    settings = exam_settings(settings)
    config = exam_config(planner_config(settings))
    results: list[Result] = []
    async with AsyncExitStack() as resources:
        folder = Path(resources.enter_context(tempfile.TemporaryDirectory(prefix="cronpilot-")))
        migrated = folder / "migrated.db"
        await upgrade_database(f"sqlite+aiosqlite:///{migrated}")
        for planner in planners:
            analyst = Watched(_analyst(planner, settings, resources))
            name = "rules" if planner is PlannerChoice.RULES else analyst.name
            for exam in exams:
                starting(exam, planner)
                started = time.perf_counter()
                database = folder / f"{exam.name}-{planner}.db"
                shutil.copyfile(migrated, database)
                url = f"sqlite+aiosqlite:///{database}"
                rules = planner is PlannerChoice.RULES
                sat = await sit(
                    exam, url, analyst, config, rules=rules, seed=seed, between=analyst.check
                )
                try:
                    graded = await grade(sat)
                finally:
                    await sat.store.close()
                result = Result(name, graded, time.perf_counter() - started)
                results.append(result)
                taken(result)
    return results


class Watched:
    """An analyst whose failures are counted: a model that fails its first analyses without
    answering one stops the exams (`check`) rather than scoring as a planner that chose to do
    nothing — with a wrong URL or a missing key, at the first failures, not after every exam."""

    def __init__(self, analyst: Analyst) -> None:
        self._analyst = analyst
        self.answered = 0
        self.failed = 0
        self.error = ""

    @property
    def name(self) -> str:
        return self._analyst.name

    @property
    def yields_to_rules(self) -> bool:
        return self._analyst.yields_to_rules

    async def analyse(self, brief: str, toolbox: ToolBox) -> Verdict:
        # Only an LLM that cannot be reached counts: one that answers badly is being examined.
        try:
            verdict = await self._analyst.analyse(brief, toolbox)
        except LlmUnavailable as exc:
            self.failed += 1
            self.error = exc.reason
            raise
        self.answered += 1
        return verdict

    def check(self) -> None:
        """Raise `LlmUnavailable` once `UNANSWERED_LIMIT` analyses could not reach the LLM and
        none reached it."""
        if not self.answered and self.failed >= UNANSWERED_LIMIT:
            raise LlmUnavailable(
                f"{self.failed} analyses could not reach it and none did; the last: {self.error}"
            )


def _analyst(planner: PlannerChoice, settings: Settings, resources: AsyncExitStack) -> Analyst:
    if planner is PlannerChoice.FRESHNESS:
        return FreshnessAnalyst()
    if planner is PlannerChoice.HEURISTIC:
        return HeuristicAnalyst()
    if planner is PlannerChoice.RULES:
        return RulesOnly()
    # Retries wait in real time: the exam's clock stands still while the planner thinks.
    chat = build_chat_model(settings, SystemClock())
    resources.push_async_callback(chat.close)
    return LlmAnalyst(chat, settings.planner_max_steps, settings.planner_max_tokens)
