"""The demo's jobs (the example file) run for a while on a fake clock, so that the console has
something to show: the simulator on loopback, one scheduler pass per simulated second (DAG
dependants called as their upstreams finish), schemas learnt and traces recorded after each
pass, and the heuristic planner's rounds, as `cronpilot demo` does with its workers.

Deterministic and quick (no real waiting); shared by the browser tests and the screenshots
script (`python -m bench.screenshots`)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from datetime import datetime

from cronpilot.adapters.bootstrap import planner_config
from cronpilot.adapters.http.dispatcher import AiohttpDispatcher
from cronpilot.adapters.jobs_file import example_jobs_file
from cronpilot.domain.access.access import Scope
from cronpilot.domain.model import Claim, Finish, PlannerMode, Recorded
from cronpilot.domain.planning.planning import ProposalDraft, ProposalKind
from cronpilot.domain.ports import JobDeclaration, Store
from cronpilot.harness.stories import LOOPBACK, START, staged
from cronpilot.planner.heuristic import HeuristicAnalyst
from cronpilot.planner.worker import PlannerWorker
from cronpilot.scheduler.requests import request_for
from cronpilot.usecases.access import create_token
from cronpilot.usecases.graph_edges import record_trace, refresh_job_provides
from cronpilot.usecases.proposals import ProposalDesk, Proposer
from cronpilot.usecases.schema_learning import learn_schema
from tests.support.clock import FakeClock
from tests.support.settings import limits_for_tests, settings_for_tests

WORKER = "console-story"
LEASE_SECONDS = 30.0
REVIEWED = "etl/fetch"
"""The endpoint whose proposal waits for an admin."""


@dataclass(frozen=True)
class Story:
    clock: FakeClock
    secrets: dict[Scope, str]
    """A token of each scope, `SCOPE-viewer`."""


async def _call(
    store: Store, dispatcher: AiohttpDispatcher, claims: list[Claim], now: datetime
) -> None:
    """Call `claims`, record them, learn from them, then call the dependants they started."""
    while claims:
        responses = await asyncio.gather(*(dispatcher.dispatch(request_for(c)) for c in claims))
        finishes = [
            Finish(claim, WORKER, response, now, LEASE_SECONDS)
            for claim, response in zip(claims, responses, strict=True)
        ]
        outcomes = await store.claims.finish_many(finishes)
        claims = []
        for claim, outcome in zip(finishes, outcomes, strict=True):
            assert isinstance(outcome, Recorded), outcome
            await learn_schema(store.unit_of_work, store.reading, claim.claim.endpoint, now)
            if outcome.run.parent_trace_id is not None:
                await record_trace(store.unit_of_work, store.reading, outcome.run, now)
            claims += outcome.started


async def _propose_for_review(store: Store, now: datetime) -> None:
    """A proposal held for an admin: etl is in `review` mode, and the heuristic has nothing to
    say of fetch (at its minimum already); an LLM reading "a new batch comes every 4 s" would."""
    fetch = await store.catalog.get_endpoint(REVIEWED)
    draft = ProposalDraft(
        ProposalKind.INTERVAL,
        "a new batch comes every 4 s: fetching every 2 s finds the same batch every other time",
        interval_seconds=4,
        ttl_seconds=3600,
    )
    desk = ProposalDesk(store.unit_of_work, store.reading, None, limits_for_tests())
    await desk.propose(draft, fetch.id, Proposer("heuristic", PlannerMode.REVIEW), now)


async def play(store: Store, seconds: int = 45, seed: int = 7) -> Story:
    """Play the story into `store` (migrated, empty) and issue a token of each scope."""
    clock = FakeClock(START)
    dispatcher = AiohttpDispatcher(allowed_networks=LOOPBACK)
    jobs = example_jobs_file().read_text(encoding="utf-8")
    stage = staged(
        store, jobs, "demo", clock.now, actor="cli:demo@host", seed=seed, cycle_seconds=seconds
    )
    try:
        async with stage as staging:
            await _story(store, dispatcher, staging.declarations, clock, seconds)
    finally:
        await dispatcher.close()
    secrets = {}
    for scope in Scope:
        _, secret = await create_token(
            store.unit_of_work, f"{scope}-viewer", scope, "cli:demo@host", clock.now()
        )
        secrets[scope] = secret
    return Story(clock, secrets)


async def _story(
    store: Store,
    dispatcher: AiohttpDispatcher,
    declarations: list[JobDeclaration],
    clock: FakeClock,
    seconds: int,
) -> None:
    """The story's seconds: a scheduler pass and a planner round each, then a proposal held
    for review."""
    config = planner_config(settings_for_tests(worker_id="planner"))
    # The story changes schedules often in little time; the hourly limit is tested elsewhere.
    limits = limits_for_tests(max_changes_per_hour=100)
    desk = ProposalDesk(store.unit_of_work, store.reading, None, limits)
    planner = PlannerWorker(
        store, HeuristicAnalyst(), clock, replace(config, limits=limits), desk=desk
    )
    for _ in range(seconds):
        now = clock.now()
        claims = await store.claims.claim_due(now, WORKER, LEASE_SECONDS, 100)
        await _call(store, dispatcher, claims, now)
        await planner.run_round()
        clock.advance(1)
    for declaration in declarations:
        await refresh_job_provides(store.unit_of_work, declaration.job.name, clock.now())
    await _propose_for_review(store, clock.now())
