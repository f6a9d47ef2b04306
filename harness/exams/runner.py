"""Sitting an exam: the endpoint simulator on 127.0.0.1 and a planner on a fake clock, second by
second — a scheduler pass (claim what is due, call it, record it, learn schemas and volatile
fields from it as often as a scheduler worker's learner does), then planner rounds until none
is left — on a database of its own. Then grading: each graded endpoint's proposals scored
against what the story wanted.

Stepping by hand, not running the workers' own loops: every exam tells the same story each
time, whatever the machine's speed, and a slow LLM answer only makes the exam take longer.
The pass is the store's claim and fenced finish without the slot runner's extras: no retries
within a slot, no `success_when`, no steering headers — no exam declares them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from functools import partial

from cronpilot.adapters.http.dispatcher import AiohttpDispatcher
from cronpilot.adapters.manual_clock import ManualClock
from cronpilot.adapters.sql import SqlStore, open_sql_store, upgrade_database
from cronpilot.domain.model import Endpoint, Finish, Recorded, Run
from cronpilot.domain.planning.guardrails import bounds_refusal
from cronpilot.domain.planning.planning import AnalysisSession, Proposal, SessionStatus
from cronpilot.domain.schedule.schedule import baseline_period
from cronpilot.harness.exams.catalog import CYCLE_SECONDS, Exam, World
from cronpilot.harness.exams.freshness import Freshness, freshness_of
from cronpilot.harness.exams.scores import (
    Proposed,
    Score,
    directions,
    score,
    second_of,
    standings,
)
from cronpilot.harness.stories import LOOPBACK, START, staged
from cronpilot.planner.config import PlannerConfig
from cronpilot.planner.session import Analyst, Verdict, submitted
from cronpilot.planner.tools import SUBMIT, ToolBox
from cronpilot.planner.worker import PlannerWorker
from cronpilot.scheduler.learning import LEARN_EVERY_SECONDS, RunLearner
from cronpilot.scheduler.requests import request_for
from cronpilot.usecases.proposals import ProposalDesk

WORKER = "exam"
LEASE_SECONDS = 60.0
BATCH = 100
EXAM_CHANGES_PER_HOUR = 600
"""An exam tells an hour's story in a minute or two: the hourly limit of a real hour would
be the thing scored."""
EXAM_LOOK_AGAIN_SECONDS = 1.0
_ALL = 100_000


class RulesOnly:
    """The analyst of the rules planner's exams: it looks, proposes nothing, and looks again a
    day later, so that only the endpoints' rules propose."""

    @property
    def name(self) -> str:
        return "rules-only"

    @property
    def yields_to_rules(self) -> bool:
        return True

    async def analyse(self, brief: str, toolbox: ToolBox) -> Verdict:
        final = {"reasoning": "the rules decide", "confidence": 1.0}
        await toolbox.call(SUBMIT, {**final, "next_analysis_in_seconds": 86_400})
        return submitted(toolbox)


def exam_config(config: PlannerConfig) -> PlannerConfig:
    """`config` as an exam runs it: its own worker, an hour's limits told in minutes, and
    every session stored, quiet ones too: the grade counts each analysis and its tokens."""
    limits = replace(config.limits, max_changes_per_hour=EXAM_CHANGES_PER_HOUR)
    return replace(
        config,
        worker_id=WORKER,
        min_look_again_seconds=EXAM_LOOK_AGAIN_SECONDS,
        limits=limits,
        keep_quiet=True,
    )


@dataclass
class Sat:
    """An exam that was sat: the open store to grade or inspect (the caller closes it)."""

    exam: Exam
    store: SqlStore
    config: PlannerConfig
    seed: int


async def sit(
    exam: Exam,
    database_url: str,
    analyst: Analyst,
    config: PlannerConfig,
    *,
    rules: bool = False,
    seed: int = 7,
    between: Callable[[], None] = lambda: None,
) -> Sat:
    """Tell `exam`'s story on a fresh database at `database_url`, with `analyst` (and the
    rules of its jobs when `rules`); `between` is called after each second (it may raise to
    stop the story)."""
    clock = ManualClock(START)
    await upgrade_database(database_url)
    store = await open_sql_store(database_url)
    dispatcher = AiohttpDispatcher(allowed_networks=LOOPBACK)
    try:
        jobs = exam.jobs_for(rules)
        stage = staged(
            store, jobs, exam.name, clock.now, actor=WORKER, seed=seed, cycle_seconds=CYCLE_SECONDS
        )
        async with stage:
            learner = RunLearner(store.unit_of_work, store.reading, clock)
            learnt: dict[str, int] = {}
            desk = ProposalDesk(store.unit_of_work, store.reading, None, config.limits)
            planner = PlannerWorker(store, analyst, clock, config, desk=desk)
            for second in range(exam.seconds):
                ran = await _scheduler_pass(store, dispatcher, clock.now())
                # As a scheduler worker's learner: an endpoint at most every
                # LEARN_EVERY_SECONDS, its runs of the meantime read together from the watermark.
                for endpoint in ran:
                    if second - learnt.get(endpoint.id, -_ALL) >= LEARN_EVERY_SECONDS:
                        learnt[endpoint.id] = second
                        await learner.learn(endpoint)
                await learner.refresh_stale()
                while await planner.run_round():
                    pass
                between()
                clock.advance(1)
        return Sat(exam, store, config, seed)
    except BaseException:
        await store.close()
        raise
    finally:
        await dispatcher.close()


async def _scheduler_pass(
    store: SqlStore, dispatcher: AiohttpDispatcher, now: datetime
) -> list[Endpoint]:
    """What a scheduler worker does when it wakes at `now`; returns the endpoints that ran."""
    claims = await store.claims.claim_due(now, WORKER, LEASE_SECONDS, BATCH)
    responses = await asyncio.gather(*(dispatcher.dispatch(request_for(c)) for c in claims))
    finishes = [
        Finish(claim, WORKER, response, now, LEASE_SECONDS)
        for claim, response in zip(claims, responses, strict=True)
    ]
    ran: dict[str, Endpoint] = {}
    for claim, outcome in zip(claims, await store.claims.finish_many(finishes), strict=True):
        if not isinstance(outcome, Recorded):
            raise outcome
        for started in outcome.started:
            # No exam has DAG dependants: one started here would only hold its lease.
            await store.claims.release(started, WORKER)
        ran[claim.endpoint.id] = claim.endpoint
    return list(ran.values())


@dataclass(frozen=True, slots=True)
class Grade:
    exam: str
    score: Score
    analyses: int
    prompt_tokens: int
    completion_tokens: int
    failed: int = 0
    """Analyses whose LLM could not answer (`SessionStatus.FAILED`)."""
    error: str | None = None
    """The newest failed analysis's error."""
    freshness: Freshness | None = None
    """How fresh the calls kept the exam's endpoints; None when no endpoint answered twice."""


async def grade(sat: Sat) -> Grade:
    """Score the graded endpoints' proposals (`harness.exams.scores`), count the tokens, and
    measure how fresh the calls kept every endpoint (`harness.exams.freshness`)."""
    exam = sat.exam
    endpoints = {e.name: e for e in await sat.store.catalog.list_endpoints(exam.name)}
    runs = {e.id: await _exam_runs(sat.store, e.id) for e in endpoints.values()}
    sessions = await sat.store.planner.list_sessions(limit=_ALL)
    proposals = proposals_in_order(await sat.store.planner.list_proposals(limit=_ALL), sessions)
    world = World.of(sat.seed, START)
    total = Score()
    for name, grading in exam.graded.items():
        endpoint = endpoints[name]
        mine = [p for p in proposals if p.endpoint_id == endpoint.id]
        total += score(
            _proposed(mine, endpoint, sat),
            partial(grading, world),
            exam.seconds,
            exam.lag,
        )
    failed = [s for s in sessions if s.status is SessionStatus.FAILED]
    return Grade(
        exam.name,
        total,
        len(sessions),
        sum(s.prompt_tokens for s in sessions),
        sum(s.completion_tokens for s in sessions),
        len(failed),
        failed[0].error if failed else None,
        freshness_of(list(endpoints.values()), runs, exam.seconds, START),
    )


async def _exam_runs(store: SqlStore, endpoint_id: str) -> list[Run]:
    """An endpoint's runs, oldest first, timed by their slots on the exam's clock: the
    dispatcher stamps their start with the machine's, which runs on while the exam's stands
    still."""
    newest_first = await store.runs.list_runs(endpoint_id, _ALL)
    return [replace(run, started_at=run.slot_at) for run in reversed(newest_first)]


def proposals_in_order(
    proposals: Sequence[Proposal], sessions: Sequence[AnalysisSession]
) -> list[Proposal]:
    """Oldest first. The exam's clock stands still while the planner works, so the proposals
    of one round share their time: within it, the order of the tool calls that made them,
    whose outcome names the proposal (`domain.planning.planning.proposal_outcome`)."""
    calls = [call for session in sessions for call in session.tool_calls if call.outcome]
    made_by = {
        p.id: next((call.seq for call in calls if p.id in (call.outcome or "")), 0)
        for p in proposals
    }
    return sorted(proposals, key=lambda p: (p.created_at, made_by[p.id]))


def _proposed(proposals: Sequence[Proposal], endpoint: Endpoint, sat: Sat) -> list[Proposed]:
    baseline = baseline_period(endpoint.spec.schedule, START).total_seconds()
    return [
        Proposed(
            second_of(p.created_at, START),
            way,
            bounds_refusal(p.draft, endpoint, p.created_at, sat.config.limits) is None,
            p.status,
            until,
        )
        for p, way, until in zip(
            proposals, directions(proposals, baseline), standings(proposals, START), strict=True
        )
    ]
