"""The planner exams shipped with cronpilot: the five use cases and five troubles, each a jobs
document on the endpoint simulator, how long its story lasts, and what the right call was for
each endpoint it grades at each second, read from the same functions the simulator answers
with (`harness.exams.scores` says how proposals are scored against it).

The `rules` in a jobs document are what a rule writer would declare; they are taken out when
the heuristic or an LLM sits the exam, so that each planner is scored on its own.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from textwrap import indent

import yaml

from cronpilot.domain.errors import InvalidConfig
from cronpilot.harness.exams.scores import CALM, EITHER, RELAX, TIGHTEN, Want
from cronpilot.harness.simulator.scenario import Scenario
from cronpilot.harness.simulator.troubles import SLOW_FROM_MS, Troubles

CYCLE_SECONDS = 60
"""The simulator's cycle in the exams: a flash sale, a billing period."""


@dataclass(frozen=True, slots=True)
class World:
    """What the simulator answers at any second of an exam."""

    scenario: Scenario
    troubles: Troubles

    @classmethod
    def of(cls, seed: int, started: datetime) -> World:
        return cls(Scenario(seed, started, CYCLE_SECONDS), Troubles(seed, started))


Grading = Callable[[World, int], Want]
"""The right call for one endpoint at a second of the story."""


@dataclass(frozen=True)
class Exam:
    name: str
    """Also the name of its job: refs are `name/endpoint`."""
    summary: str
    endpoints: str
    """Its job's endpoints, a YAML list; `${SIMULATOR_URL}` is the simulator's base URL."""
    graded: Mapping[str, Grading] = field(default_factory=dict)
    """By endpoint name; the other endpoints feed the story and are not scored."""
    seconds: int = 90
    lag: int = 10
    """How late a proposal may follow the answers that called for it: about the interval
    of the endpoint whose answers tell, and a planner round."""

    @property
    def jobs(self) -> str:
        """The jobs document: one job, named as the exam, whose changes the planner makes
        without review."""
        endpoints = indent(self.endpoints.strip("\n"), " " * 6)
        return (
            f"jobs:\n  - name: {self.name}\n    planner_mode: auto\n    endpoints:\n{endpoints}\n"
        )

    def jobs_for(self, rules: bool) -> str:
        """The jobs document, with its rules or without."""
        return self.jobs if rules else without_rules(self.jobs)


def without_rules(jobs: str) -> str:
    """A jobs document with every endpoint's rules taken out (as JSON, which is YAML)."""
    document = yaml.safe_load(jobs)
    for job in document["jobs"]:
        for endpoint in job["endpoints"]:
            endpoint.pop("rules", None)
    return json.dumps(document)


def _fraud(world: World, second: int) -> Want:
    rate = world.scenario.fraud_score(second)["fraud_rate"]
    return TIGHTEN if rate > 0.05 else RELAX if rate < 0.02 else EITHER


def _transform(world: World, second: int) -> Want:
    return TIGHTEN if world.scenario.etl_fetch(second)["records"] > 0 else CALM


def _region(region: str) -> Grading:
    def want(world: World, second: int) -> Want:
        return CALM if world.scenario.health(region, second)["status"] == "ok" else TIGHTEN

    return want


def _queue(world: World, second: int) -> Want:
    pending = world.scenario.queue_depth(second)["pending"]
    return TIGHTEN if pending > 200 else RELAX if pending < 50 else EITHER


def _budget(world: World, second: int) -> Want:
    over = world.scenario.billing_usage(second)["forecast"] == "over_budget"
    return TIGHTEN if over else CALM


def _anything(world: World, second: int) -> Want:
    return EITHER


def _unchanging(world: World, second: int) -> Want:
    return RELAX


def _slowing(world: World, second: int) -> Want:
    return TIGHTEN if world.troubles.latency_ms(second) >= SLOW_FROM_MS else EITHER


def _while_stock_up(world: World, second: int) -> Want:
    return EITHER if world.troubles.stock_up(second) else CALM


def _night(world: World, second: int) -> Want:
    return RELAX if world.troubles.night(second) else EITHER


USE_CASES = (
    Exam(
        "flash-sale",
        "investigate orders only while the fraud rate is high",
        """
- {name: fraud_score, url: "${SIMULATOR_URL}/fraud/score", interval: 10s,
   min_interval: 5s, max_interval: 2m}
- name: investigator
  url: ${SIMULATOR_URL}/fraud/investigate
  method: POST
  body: {max_orders: 5}
  interval: 30s
  min_interval: 10s
  max_interval: 5m
  rules:
    - {when: 'fraud_score.body.fraud_rate > 0.05', then: resume}
    - {when: 'fraud_score.body.fraud_rate < 0.02', then: {pause: {for: 10m}}}
""",
        {"investigator": _fraud},
        seconds=70,
        lag=12,
    ),
    Exam(
        "etl",
        "transform soon after a fetch that found records, not otherwise",
        """
- {name: fetch, url: "${SIMULATOR_URL}/etl/fetch", interval: 5s, min_interval: 5s,
   max_interval: 1m}
- name: transform
  url: ${SIMULATOR_URL}/etl/transform
  interval: 10m
  min_interval: 1s
  max_interval: 1h
  rules:
    - {when: 'fetch.body.records > 0', then: run_now}
""",
        {"transform": _transform},
        seconds=62,
        lag=7,
    ),
    Exam(
        "health",
        "watch a region closely while it is degraded or down, less once it is ok",
        """
- name: eu
  url: ${SIMULATOR_URL}/health/eu
  interval: 5s
  min_interval: 2s
  max_interval: 30s
  rules: &watch
    - {when: 'body.status != "ok"', then: {interval: 2s, ttl: 1m}}
    - {when: 'true', then: baseline}
- {name: us, url: "${SIMULATOR_URL}/health/us", interval: 5s, min_interval: 2s,
   max_interval: 30s, rules: *watch}
- {name: ap, url: "${SIMULATOR_URL}/health/ap", interval: 5s, min_interval: 2s,
   max_interval: 30s, rules: *watch}
""",
        {region: _region(region) for region in ("eu", "us", "ap")},
        seconds=62,
        lag=7,
    ),
    Exam(
        "queue",
        "process often while the queue is deep, rarely while it is shallow",
        """
- {name: depth, url: "${SIMULATOR_URL}/queue/depth", interval: 5s, min_interval: 2s,
   max_interval: 1m}
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
        {"processor": _queue},
        seconds=62,
        lag=7,
    ),
    Exam(
        "billing",
        "clean up at once when the projected spend passes the budget",
        """
- {name: usage, url: "${SIMULATOR_URL}/billing/usage", interval: 15s, max_interval: 5m}
- name: cleanup
  url: ${SIMULATOR_URL}/billing/cleanup
  method: DELETE
  interval: 30s
  max_interval: 10m
  rules:
    - {when: 'usage.body.projected_usd > usage.body.budget_usd', then: run_now}
""",
        {"cleanup": _budget},
        seconds=62,
        lag=17,
    ),
)

TROUBLES = (
    Exam(
        "flapping",
        "a health check up 6 s, down 6 s: any schedule will do, flip-flopping will not",
        """
- {name: check, url: "${SIMULATOR_URL}/troubles/flapping", interval: 5s,
   min_interval: 2s, max_interval: 1m}
""",
        {"check": _anything},
    ),
    Exam(
        "volatile",
        "a report whose only changes are a timestamp and a request id: poll it less",
        """
- {name: report, url: "${SIMULATOR_URL}/troubles/volatile", interval: 5s,
   min_interval: 5s, max_interval: 5m}
""",
        {"report": _unchanging},
        seconds=120,
    ),
    Exam(
        "degrading",
        "an API slowing down 20 ms a second: watch it closely once it is slow",
        """
- name: api
  url: ${SIMULATOR_URL}/troubles/degrading
  interval: 10s
  min_interval: 2s
  max_interval: 1m
  rules:
    - {when: 'body.latency_ms >= 600.0', then: {interval: 2s, ttl: 10m}}
""",
        {"api": _slowing},
        seconds=70,
        lag=12,
    ),
    Exam(
        "sibling-failing",
        "the stock service goes down at 40 s: neither it nor the orders that read it is "
        "called more often",
        """
- {name: stock, url: "${SIMULATOR_URL}/troubles/stock", interval: 5s, min_interval: 2s,
   max_interval: 1m}
- name: orders
  url: ${SIMULATOR_URL}/troubles/orders
  interval: 5s
  min_interval: 2s
  max_interval: 2m
  rules:
    - {when: 'stock.status >= 500', then: {interval: 1m, ttl: 10m}}
    - {when: 'true', then: baseline}
""",
        {"stock": _while_stock_up, "orders": _while_stock_up},
    ),
    Exam(
        "quiet-night",
        "sign-ups stop at 30 s for the night: poll less until morning",
        """
- name: signups
  url: ${SIMULATOR_URL}/troubles/signups
  interval: 10s
  min_interval: 5s
  max_interval: 10m
  rules:
    - {when: 'body.signups_last_minute == 0', then: {interval: 5m, ttl: 1h}}
""",
        {"signups": _night},
        seconds=120,
        lag=12,
    ),
)

EXAMS = USE_CASES + TROUBLES


def chosen_exams(names: Sequence[str]) -> list[Exam]:
    """The exams named, each once (all of them when none is); an unknown name is an
    `InvalidConfig`."""
    known = {exam.name: exam for exam in EXAMS}
    unknown = [name for name in names if name not in known]
    if unknown:
        raise InvalidConfig("--exam", f"no exam {unknown[0]!r}; the exams are {', '.join(known)}")
    return [known[name] for name in dict.fromkeys(names)] if names else list(EXAMS)
