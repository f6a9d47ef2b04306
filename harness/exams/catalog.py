"""The planner exams shipped with cronpilot: the five use cases and five troubles, each a jobs
document on the endpoint simulator, how long its story lasts, and what the right call was for
each endpoint it grades at each second, read from the same functions the simulator answers
with (`harness.exams.scores` says how proposals are scored against it).

The `rules` in a jobs document are what a rule writer would declare; they are taken out when
any other planner sits the exam, so that each planner is scored on its own.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import yaml

from cronpilot.domain.errors import InvalidConfig
from cronpilot.harness.exams.scores import CALM, EITHER, RELAX, TIGHTEN, Want
from cronpilot.harness.simulator.scenario import Scenario
from cronpilot.harness.simulator.troubles import SLOW_FROM_MS, Troubles

CYCLE_SECONDS = 60
"""The simulator's cycle in the exams: a flash sale, a billing period."""
JOBS = Path(__file__).with_name("jobs")


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
    """Also the name of its job (refs are `name/endpoint`) and of its jobs document,
    `jobs/NAME.yaml` beside this module, where `${SIMULATOR_URL}` is the simulator's base
    URL."""
    summary: str
    graded: Mapping[str, Grading] = field(default_factory=dict)
    """By endpoint name; the other endpoints feed the story and are not scored."""
    seconds: int = 90
    lag: int = 10
    """How late a proposal may follow the answers that called for it: about the interval
    of the endpoint whose answers tell, and a planner round."""

    @property
    def jobs(self) -> str:
        return (JOBS / f"{self.name}.yaml").read_text(encoding="utf-8")

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
        {"investigator": _fraud},
        seconds=70,
        lag=12,
    ),
    Exam(
        "etl",
        "transform soon after a fetch that found records, not otherwise",
        {"transform": _transform},
        seconds=62,
        lag=7,
    ),
    Exam(
        "health",
        "watch a region closely while it is degraded or down, less once it is ok",
        {region: _region(region) for region in ("eu", "us", "ap")},
        seconds=62,
        lag=7,
    ),
    Exam(
        "queue",
        "process often while the queue is deep, rarely while it is shallow",
        {"processor": _queue},
        seconds=62,
        lag=7,
    ),
    Exam(
        "billing",
        "clean up at once when the projected spend passes the budget",
        {"cleanup": _budget},
        seconds=62,
        lag=17,
    ),
)

TROUBLES = (
    Exam(
        "flapping",
        "a health check up 6 s, down 6 s: any schedule will do, flip-flopping will not",
        {"check": _anything},
    ),
    Exam(
        "volatile",
        "a report whose only changes are a timestamp and a request id: poll it less",
        {"report": _unchanging},
        seconds=120,
    ),
    Exam(
        "degrading",
        "an API slowing down 20 ms a second: watch it closely once it is slow",
        {"api": _slowing},
        seconds=70,
        lag=12,
    ),
    Exam(
        "sibling-failing",
        "the stock service goes down at 40 s: neither it nor the orders that read it is "
        "called more often",
        {"stock": _while_stock_up, "orders": _while_stock_up},
    ),
    Exam(
        "quiet-night",
        "sign-ups stop at 30 s for the night: poll less until morning",
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
