"""The freshness analyst: the built-in planner that estimates how often each endpoint changes
and spends its job's calls where they keep copies fresh (decision 0048). It proposes through
the same path as the heuristic; the rules are `domain.planning.freshness_planner`.

An endpoint's estimate is made from its newest runs when it is analysed, off the scheduler's
hot path, and kept here for its siblings' analyses: an endpoint not analysed yet by this
planner keeps its interval, and its calls, in the split."""

from __future__ import annotations

from cronpilot.domain.model import RunStatus
from cronpilot.domain.planning.change_rate import RateEstimate, estimate, looks_of
from cronpilot.domain.planning.freshness_planner import judge_freshness
from cronpilot.planner.session import Verdict, submitted
from cronpilot.planner.tools import SUBMIT, ToolBox

FRESHNESS = "freshness"
HISTORY_RUNS = 200
"""The newest runs an estimate is made from (bodies are compared, not read by a model)."""


class FreshnessAnalyst:
    def __init__(self) -> None:
        self._estimates: dict[str, RateEstimate | None] = {}

    @property
    def name(self) -> str:
        return FRESHNESS

    @property
    def yields_to_rules(self) -> bool:
        return True

    async def analyse(self, brief: str, toolbox: ToolBox) -> Verdict:
        endpoint = toolbox.endpoint
        context = toolbox.context
        runs = await context.store.runs.list_runs(endpoint.id, HISTORY_RUNS)
        answered = [run for run in runs if run.status is RunStatus.SUCCESS]
        if len(answered) > 1:
            # None here says that answers came and could not be compared.
            self._estimates[endpoint.id] = estimate(looks_of(endpoint, list(reversed(runs))))
        verdict = judge_freshness(
            endpoint, self._estimates, list(context.siblings.values()), context.now()
        )
        if verdict.interval_seconds is not None:
            await toolbox.call(
                "propose_interval",
                {
                    "interval_seconds": verdict.interval_seconds,
                    "ttl_seconds": verdict.ttl_seconds,
                    "reason": verdict.reasoning,
                },
            )
        await toolbox.call(
            SUBMIT,
            {
                "reasoning": verdict.reasoning,
                "confidence": verdict.confidence,
                "next_analysis_in_seconds": verdict.look_again_seconds,
            },
        )
        return submitted(toolbox)
