"""The five use cases told with response rules and no LLM: the endpoint simulator on 127.0.0.1
(on a fake clock), a scheduler worker and a heuristic planner worker each in its own loop, as
`cronpilot scheduler --with-planner` runs them, and the clock advanced one second at a time
once both have settled (`tests.support.settling`). Staged as the planner exams are
(`harness.stories`); their jobs documents are the exams' first five with the workers' own
loops in mind (a DAG for etl, no clamps), which the tests here hold to."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import datetime

from cronpilot.adapters.bootstrap import planner_config, worker_config
from cronpilot.adapters.http.dispatcher import AiohttpDispatcher
from cronpilot.adapters.sql import SqlStore, open_sql_store
from cronpilot.adapters.wake import InProcessWaker
from cronpilot.domain.planning.guardrails import GuardrailLimits
from cronpilot.harness.stories import LOOPBACK, START, staged
from cronpilot.planner.heuristic import HeuristicAnalyst
from cronpilot.planner.session import Analyst
from cronpilot.planner.worker import PlannerWorker
from cronpilot.scheduler.worker import SchedulerWorker
from cronpilot.usecases.proposals import ProposalDesk
from tests.support.clock import FakeClock
from tests.support.settings import limits_for_tests, settings_for_tests
from tests.support.settling import InFlight, TrackedDispatcher, tracked

STOP_SECONDS = 30
# Stories change schedules often on purpose (an hour's story in a minute); the hourly limit is
# tested elsewhere.
LIMITS = limits_for_tests(max_changes_per_hour=100)
STORY_DWELL_SECONDS = 2.0
"""For the same reason a rule-made change dwells 2 s (2 min in an hour's story told in a
minute); the dwell itself is tested with the default."""

Admin = Callable[[ProposalDesk, SqlStore, datetime], Awaitable[None]]
"""What an admin does each second of a story, through the proposal desk (`cronpilot proposals
approve` does the same)."""


@dataclass(frozen=True)
class RuleStory:
    name: str
    jobs: str
    seconds: int = 62


FLASH_SALE = RuleStory(
    "flash-sale",
    """
jobs:
  - name: flash-sale
    planner_mode: auto
    endpoints:
      - {name: fraud_score, url: "${SIMULATOR_URL}/fraud/score", interval: 10s,
         planner_mode: "off"}
      - name: investigator
        url: ${SIMULATOR_URL}/fraud/investigate
        method: POST
        body: {max_orders: 5}
        interval: 5s
        rules:
          - {when: 'fraud_score.body.fraud_rate > 0.05', then: resume}
          - {when: 'true', then: {pause: {for: 10m}}}
""",
)
ETL = RuleStory(
    "etl",
    """
jobs:
  - name: etl
    planner_mode: auto
    endpoints:
      - {name: fetch, url: "${SIMULATOR_URL}/etl/fetch", interval: 5s, planner_mode: "off"}
      - name: transform
        url: ${SIMULATOR_URL}/etl/transform?batch_id={{ fetch.batch_id }}
        method: POST
        depends_on: [fetch]
        run_if: 'fetch.body.records > 0'
""",
)
HEALTH = RuleStory(
    "health",
    """
jobs:
  - name: health
    planner_mode: auto
    endpoints:
      - {name: eu, url: "${SIMULATOR_URL}/health/eu", interval: 5s, planner_mode: "off"}
      - {name: us, url: "${SIMULATOR_URL}/health/us", interval: 5s, planner_mode: "off"}
      - {name: ap, url: "${SIMULATOR_URL}/health/ap", interval: 5s, planner_mode: "off"}
      - name: ap_failover
        url: ${SIMULATOR_URL}/failover/ap
        interval: 2s
        rules:
          - {when: 'ap.status >= 500', then: resume}
          - {when: 'true', then: {pause: {for: 10m}}}
""",
)
QUEUE = RuleStory(
    "queue",
    """
jobs:
  - name: queue
    planner_mode: auto
    endpoints:
      - {name: depth, url: "${SIMULATOR_URL}/queue/depth", interval: 5s, planner_mode: "off"}
      - name: processor
        url: ${SIMULATOR_URL}/queue/process
        method: POST
        body: {batch_size: 100}
        interval: 10s
        min_interval: 3s
        max_interval: 2m
        rules:
          - {when: 'depth.body.pending > 200', then: {interval: 3s, ttl: 10m}}
          - {when: 'depth.body.pending < 50', then: {interval: 1m, ttl: 10m}}
          - {when: 'true', then: baseline}
""",
)
BILLING = RuleStory(
    "billing",
    """
jobs:
  - name: billing
    planner_mode: review
    endpoints:
      - {name: usage, url: "${SIMULATOR_URL}/billing/usage", interval: 15s, planner_mode: "off"}
      - name: cleanup
        url: ${SIMULATOR_URL}/billing/cleanup
        method: DELETE
        cron: "0 3 * * *"
        rules:
          - {when: 'usage.body.projected_usd > usage.body.budget_usd', then: run_now}
""",
)
RULE_STORIES = (FLASH_SALE, ETL, HEALTH, QUEUE, BILLING)


async def tell(
    story: RuleStory,
    database_url: str,
    admin: Admin | None = None,
    limits: GuardrailLimits = LIMITS,
    dwell_seconds: float | None = STORY_DWELL_SECONDS,
    *,
    analyst: Analyst | None = None,
) -> SqlStore:
    """Run `story` on a migrated database second by second; returns the open store (the
    caller closes it). `dwell_seconds`: the rules' default dwell; None: the setting's default.
    `analyst`: the planner beside the rules (the heuristic when None)."""
    clock = FakeClock(START)
    store = await open_sql_store(database_url)
    flight = InFlight()
    dispatcher = TrackedDispatcher(AiohttpDispatcher(allowed_networks=LOOPBACK), flight)
    try:
        async with staged(store, story.jobs, story.name, clock.now, actor="test"):
            dwell = {} if dwell_seconds is None else {"rules_dwell_seconds": dwell_seconds}
            settings = settings_for_tests(
                worker_id=story.name, max_sleep_seconds=3600, planner_poll_seconds=1, **dwell
            )
            watched, waker, stop = tracked(store, flight), InProcessWaker(), asyncio.Event()
            scheduler = SchedulerWorker(watched, dispatcher, clock, waker, worker_config(settings))
            planner = PlannerWorker(
                watched,
                analyst or HeuristicAnalyst(),
                clock,
                replace(planner_config(settings), limits=limits),
                desk=ProposalDesk(watched.unit_of_work, watched.reading, waker, limits),
            )
            workers = [
                asyncio.create_task(scheduler.run(stop)),
                asyncio.create_task(planner.run(stop)),
            ]
            try:
                await flight.settled()
                for _ in range(story.seconds):
                    clock.advance(1)
                    await flight.settled()
                    if admin is not None:
                        await admin(planner.desk, store, clock.now())
                        await flight.settled()
            finally:
                stop.set()
                async with asyncio.timeout(STOP_SECONDS):
                    await asyncio.gather(*workers)
        return store
    except BaseException:
        await store.close()
        raise
    finally:
        await dispatcher.close()
