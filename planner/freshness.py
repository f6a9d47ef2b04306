"""The freshness analyst: the built-in planner (decisions 0048, 0058). It estimates how often
each endpoint of a job changes and spends the job's calls where they keep copies fresh; it
proposes through the same path as any planner; the rules are `domain.planning.freshness_planner`.

The estimates are made from the job's newest runs when one of its endpoints is analysed, off
the scheduler's hot path; nothing is kept between looks, so a restarted planner knows as much
as the one before it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from cronpilot.domain.model import Endpoint, RunStatus
from cronpilot.domain.planning.change_rate import (
    RateEstimate,
    comparable_estimate,
    silent_until,
)
from cronpilot.domain.planning.freshness_planner import (
    LastMove,
    Suggestion,
    judge_freshness,
    last_move,
    suggestion,
)
from cronpilot.domain.planning.guardrails import RATE_WINDOW
from cronpilot.domain.ports.bundles import ToolStore
from cronpilot.domain.schedule.schedule import baseline_period
from cronpilot.planner.session import Verdict, submitted
from cronpilot.planner.tools import SUBMIT, ToolBox

FRESHNESS = "freshness"
HISTORY_RUNS = 200
"""The newest runs an estimate is made from (bodies are compared, not read by a model)."""
RECENT_PROPOSALS = 10
"""The endpoint's newest proposals its last interval change is found among."""


async def estimates_of(
    store: ToolStore, endpoints: list[Endpoint]
) -> dict[str, RateEstimate | None]:
    """Each endpoint's estimate by id: None when answers came that cannot be compared (every
    field of them volatile or ignored), the id missing when fewer than two answers came."""
    found: dict[str, RateEstimate | None] = {}
    for endpoint in endpoints:
        runs = await store.runs.list_runs(endpoint.id, HISTORY_RUNS)
        if sum(run.status is RunStatus.SUCCESS for run in runs) > 1:
            found[endpoint.id] = comparable_estimate(endpoint, runs)
    return found


def job_of(endpoint: Endpoint, siblings: Mapping[str, Endpoint]) -> list[Endpoint]:
    """The job's endpoints, `endpoint` first."""
    return [endpoint, *(e for e in siblings.values() if e.id != endpoint.id)]


async def suggest(
    store: ToolStore,
    endpoint: Endpoint,
    siblings: Mapping[str, Endpoint],
    now: datetime,
    budget: str | None = None,
) -> Suggestion | None:
    """The built-in planner's suggestion for `endpoint` (`domain.planning.freshness_planner`), for
    an LLM planner's brief and for graded autonomy to weigh proposals against."""
    job = job_of(endpoint, siblings)
    return suggestion(endpoint, await estimates_of(store, job), job, now, budget)


@dataclass(frozen=True, slots=True)
class RecentChanges:
    """What the endpoint's recent interval changes say to the freshness planner."""

    move: LastMove | None
    """Its last interval change (None for a DAG dependant, which has none)."""
    applied: int
    """The changes applied to it within the guardrails' hour."""
    silent_before_move: bool
    """A lengthening, before which its answers showed no change (read only then)."""


async def _recent_changes(store: ToolStore, endpoint: Endpoint, now: datetime) -> RecentChanges:
    async with store.reading() as tx:
        applied = await tx.planner.count_applied(endpoint.id, now - RATE_WINDOW)
        schedule = endpoint.spec.schedule
        if schedule.after_upstreams:
            return RecentChanges(None, applied, False)
        recent = await tx.planner.list_proposals(endpoint_id=endpoint.id, limit=RECENT_PROPOSALS)
    move = last_move(recent, baseline_period(schedule, now).total_seconds())
    if move is None or move.after <= move.before:
        return RecentChanges(move, applied, False)
    runs = await store.runs.list_runs(endpoint.id, HISTORY_RUNS)
    return RecentChanges(move, applied, silent_until(endpoint, runs, move.at))


class FreshnessAnalyst:
    @property
    def name(self) -> str:
        return FRESHNESS

    @property
    def yields_to_rules(self) -> bool:
        return True

    async def analyse(self, brief: str, toolbox: ToolBox) -> Verdict:
        endpoint = toolbox.endpoint
        context = toolbox.context
        job = job_of(endpoint, context.siblings)
        estimates = await estimates_of(context.store, job)
        now = context.now()
        recent = await _recent_changes(context.store, endpoint, now)
        dwell = context.desk.dwell_seconds
        verdict = judge_freshness(
            endpoint,
            estimates,
            job,
            now,
            budget=context.budget,
            move=recent.move,
            dwell_seconds=dwell,
            max_ttl_seconds=context.desk.max_hint_ttl_seconds,
            changes_left=context.desk.max_changes_per_hour - recent.applied,
            silent_before_move=recent.silent_before_move,
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
