"""The heuristic analyst: the former planner without an LLM (decision 0058), kept for the
planner exams to score against the built-in one. It reads the endpoint through the same tools
and proposes through the same path; the rules are `domain.planning.heuristic`."""

from __future__ import annotations

from cronpilot.domain.model import RunStatus
from cronpilot.domain.planning.heuristic import STEADY_RUNS, Observation, judge
from cronpilot.planner.session import Verdict, submitted
from cronpilot.planner.tools import SUBMIT, ToolBox

HEURISTIC = "heuristic"


class HeuristicAnalyst:
    @property
    def name(self) -> str:
        return HEURISTIC

    @property
    def yields_to_rules(self) -> bool:
        return True

    async def analyse(self, brief: str, toolbox: ToolBox) -> Verdict:
        # Hashes are enough to tell "same" from "changed": no bodies are read.
        history = await toolbox.call(
            "get_response_history", {"limit": STEADY_RUNS + 1, "fields": []}
        )
        runs = history.data["runs"] if isinstance(history.data, dict) else []
        # A skipped run (a quiet period's, a DAG's) made no call: nothing observed.
        observations = [
            Observation(run["status"] == RunStatus.SUCCESS.value, run["body_hash"])
            for run in runs
            if RunStatus(run["status"]).finished and run["status"] != RunStatus.SKIPPED.value
        ]
        now = toolbox.context.now()
        verdict = judge(toolbox.endpoint, observations, now)
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
