"""Freshness: does a planner spend its calls where they keep copies fresh?

    python -m bench.freshness [--hours 3] [--llm-hours 1] [--seeds 7 | 1-5 | 1,3]
        [--planners freshness,rules,llm] [--stories steady,switching]
        [--store memory|sqlite] [--jobs N]

The runs (each planner through each story for each seed) go on `--jobs` processes, as many
as there are cores by default. They run on the product's memory store (decision 0055, the
store every contract test holds to SQLite's behaviour) unless `--store sqlite` gives each
run a SQLite file: the same seed gives the same figures on both, and half a simulated hour of
the freshness planner on the steady story cost 14 s of CPU on the memory store against 53 s
on SQLite (2026-11-29, shared 2-core machine), so the file only adds the cost of its writes.

Ten sources that change at random (Poisson) with known mean times between changes, from
seconds to a day and some never, each an endpoint of one job declared every 20 s within
[5 s, 1 h]; 5 % of the calls fail. Each planner runs as the product runs it, on a fake clock:
the store's claim and fenced finish (the sources answer in process, no HTTP), then planner
rounds until none is left, then the clock jumps to the next due call. The planners:

- `freshness`: the built-in change-rate planner (`planner.freshness.FreshnessAnalyst`);
- `rules`: response rules a rule writer would declare for such sources (watch closely what
  changed in the last minute, rarely what has been quiet for an hour), through the rules
  planner (`planner.rules`), as the planner exams sit it;
- `llm (scripted)`: the exams' scripted model (`tests.support.use_cases.policy`, through the
  real `openai` SDK against `FakeOpenAI`), reading the brief's `Change rate:` line as a
  sensible model would: call about once per change, twice as rarely when none was seen.

For each: the freshness and mean age its copies reached (expected over each gap between
answered calls, for the true rate), the same calls spread evenly, the best split of those calls
for the true rates (`domain.planning.call_budget`), the share of the way from even to best, calls
per change seen, and the shortest gap between two calls of one endpoint. A second story switches
two sources' rates halfway (a minute <-> a day) and reports the best split's freshness minus
the planner's over each estimation window after the switch (the 200 calls an estimate is made
from, at the declared 20 s), the best split being that of the window's own calls.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import math
import os
import random
import re
import tempfile
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.support import print_header, print_table
from cronpilot.adapters.bootstrap import build_chat_model, build_proposal_desk
from cronpilot.adapters.clock import SystemClock
from cronpilot.adapters.configs import planner_config
from cronpilot.adapters.jobs_file import parse_declarations
from cronpilot.adapters.manual_clock import ManualClock
from cronpilot.adapters.settings import Settings
from cronpilot.adapters.sql import open_sql_store, upgrade_database
from cronpilot.domain.model import Finish, Recorded, Response
from cronpilot.domain.planning.call_budget import Source, best_intervals, even_intervals
from cronpilot.domain.planning.change_rate import age, freshness
from cronpilot.domain.ports.units import Store
from cronpilot.harness.exams.evaluation import exam_settings
from cronpilot.harness.exams.runner import RulesOnly
from cronpilot.planner.freshness import HISTORY_RUNS, FreshnessAnalyst
from cronpilot.planner.session import Analyst, LlmAnalyst
from cronpilot.planner.worker import PlannerWorker
from cronpilot.usecases.declarations import apply_declarations
from tests.support.fake_openai_server import Call, FakeOpenAI
from tests.support.memory_store import MemoryStore
from tests.support.use_cases import Brief, Need, policy

DECLARED, MIN_SECONDS, MAX_SECONDS = 20.0, 5.0, 3600.0
FAILURE_SHARE = 0.05
NEVER = math.inf
STEADY = (3.0, 30.0, 60.0, 300.0, 1800.0, 7200.0, 86_400.0, NEVER, NEVER, NEVER)
"""Mean seconds between changes (the issue's ten sources)."""
SWITCHING = ((60.0, 86_400.0), (86_400.0, 60.0), (300.0, 300.0), (NEVER, NEVER))
"""(before, after) the switch halfway."""
ESTIMATION_WINDOW = HISTORY_RUNS * DECLARED
"""The span of the calls an estimate is made from, at the declared interval."""
TARGET_SHARE, TARGET_GAP, TARGET_WINDOWS = 0.8, 0.1, 3
CLOCK_STEP = 0.001
"""The least the fake clock moves: past a call that came due during a planner round."""
SLACK = 2 * CLOCK_STEP
"""`min_interval` holds between slots (`domain.schedule.governor`): a call claimed a clock step
after its slot may be followed a step less than `min_interval` later."""
T0 = datetime(2026, 11, 29, tzinfo=UTC)
JOB, WORKER, LEASE_SECONDS, BATCH = "freshness", "bench", 60.0, 100
LOOPBACK = ["127.0.0.1/32"]
RULES = [
    # A rule writer's Nutch: what changed in the last minute is watched closely, what has been
    # quiet for an hour is called rarely, the rest on its declared schedule.
    {"when": "body.seconds_since_change < 60", "then": {"interval": "10s", "ttl": "10m"}},
    {"when": "body.seconds_since_change > 3600", "then": {"interval": "30m", "ttl": "2h"}},
    {"when": "true", "then": "baseline"},
]


def rate_of(mean: float) -> float:
    """Changes per second of a source changing every `mean` seconds on average."""
    return 0.0 if math.isinf(mean) else 1 / mean


def jobs_document(count: int, rules: bool, base: str = "http://127.0.0.1:9") -> str:
    """The job of `count` sources (JSON, which is YAML) at `base`/s0, `base`/s1…: on the fake
    clock their URLs are never called, the sources answer in process."""
    endpoints: list[dict[str, Any]] = []
    for index in range(count):
        endpoint: dict[str, Any] = {
            "name": f"s{index}",
            "url": f"{base}/s{index}",
            "interval": f"{DECLARED:g}s",
            "min_interval": f"{MIN_SECONDS:g}s",
            "max_interval": f"{MAX_SECONDS:g}s",
            # How long ago the source changed is news about it, not a change of it.
            "change_ignores": ["seconds_since_change"],
        }
        if rules:
            endpoint["rules"] = RULES
        endpoints.append(endpoint)
    return json.dumps({"jobs": [{"name": JOB, "planner_mode": "auto", "endpoints": endpoints}]})


@dataclass
class Upstream:
    """One simulated source: a Poisson process whose rate may switch at `switch` seconds, and
    the copy the scheduler keeps of it."""

    means: tuple[float, float]
    switch: float
    rng: random.Random
    failure_share: float = FAILURE_SHARE
    version: int = 0
    changed_at: float = 0.0
    next_change: float = 0.0
    last_call: float | None = None
    first_ok: float | None = None
    last_ok: float | None = None
    calls: int = 0
    answered: int = 0
    changes_seen: int = 0
    seen_version: int = 0
    shortest: float = math.inf
    fresh: float = 0.0
    """Fresh seconds (expected, for the true rate) over the answered gaps."""
    aged: float = 0.0
    """The age integrated over the answered gaps, in seconds²."""
    windows: dict[int, float] = field(default_factory=dict)
    """Fresh seconds per estimation window after the switch."""
    window_calls: dict[int, int] = field(default_factory=dict)
    """Answered calls per estimation window after the switch."""
    log: list[tuple[float, bool | None]] = field(default_factory=list)
    """Every call: when, and whether its answer changed since the previous answer (None: it
    failed), for figures over part of a run (`bench.freshness_live`)."""

    def __post_init__(self) -> None:
        self.next_change = self._draw(0.0)

    def rate_at(self, t: float) -> float:
        return rate_of(self.means[0] if t < self.switch else self.means[1])

    def _draw(self, after: float) -> float:
        rate = self.rate_at(after)
        nxt = after + self.rng.expovariate(rate) if rate > 0 else math.inf
        # Memoryless: a change drawn past the switch is drawn again from it at the new rate.
        return self._draw(self.switch) if after < self.switch <= nxt else nxt

    def _after_switch(self, start: float, end: float, share: float, *, called: bool = True) -> None:
        """A gap's fresh seconds after the switch, each estimation window its own part (a
        30-min gap ending early in a window is mostly the window's before)."""
        slot = int((end - self.switch) // ESTIMATION_WINDOW)
        if called:
            self.window_calls[slot] = self.window_calls.get(slot, 0) + 1
        while end > start:
            edge = max(start, self.switch + slot * ESTIMATION_WINDOW)
            self.windows[slot] = self.windows.get(slot, 0.0) + share * (end - edge)
            end, slot = edge, slot - 1

    def close(self, t: float) -> None:
        """The copy's gap still open at the run's end `t`, counted in the windows up to `t`
        (the expected fresh share of its first `t - last_ok` seconds): without it the last
        window would lack the open gap of every rarely called source."""
        if self.last_ok is not None and t > max(self.last_ok, self.switch):
            share = freshness(self.rate_at(self.last_ok), t - self.last_ok)
            self._after_switch(max(self.last_ok, self.switch), t, share, called=False)

    def answer(self, t: float) -> Response:
        """What the source answers a call at `t`, and the copy's bookkeeping."""
        while self.next_change <= t:
            self.version += 1
            self.changed_at = self.next_change
            self.next_change = self._draw(self.next_change)
        if self.last_call is not None:
            self.shortest = min(self.shortest, t - self.last_call)
        self.last_call = t
        self.calls += 1
        if self.rng.random() < self.failure_share:
            self.log.append((t, None))
            return _response(503, {"error": "busy"})
        if self.last_ok is not None:
            gap, rate = t - self.last_ok, self.rate_at(self.last_ok)
            share = freshness(rate, gap)
            self.fresh += share * gap
            self.aged += age(rate, gap) * gap if rate > 0 else 0.0
            if t > self.switch:
                self._after_switch(max(self.last_ok, self.switch), t, share)
            self.changes_seen += self.version != self.seen_version
        self.log.append((t, self.last_ok is not None and self.version != self.seen_version))
        self.answered += 1
        self.first_ok = t if self.first_ok is None else self.first_ok
        self.last_ok, self.seen_version = t, self.version
        since = round(t - self.changed_at, 1)
        # The content says what changed; the version alone would not do: a number that rises
        # on almost every call (a source changing every few seconds) is learnt as a counter,
        # a volatile field (docs/learning.md), and left out of every comparison.
        body = {"version": self.version, "content": f"revision {self.version}"}
        return _response(200, {**body, "seconds_since_change": since})


def _response(status: int, body: dict[str, Any]) -> Response:
    raw = json.dumps(body).encode()
    return Response(status, body, size_bytes=len(raw), body_hash=hashlib.sha256(raw).hexdigest())


@dataclass(frozen=True, slots=True)
class Outcome:
    upstreams: list[Upstream]
    seconds: float

    @property
    def _watched(self) -> float:
        """The seconds between each copy's first and last answer, summed."""
        return sum((u.last_ok or 0.0) - (u.first_ok or 0.0) for u in self.upstreams) or 1.0

    @property
    def fresh(self) -> float:
        return sum(u.fresh for u in self.upstreams) / self._watched

    @property
    def mean_age(self) -> float:
        return sum(u.aged for u in self.upstreams) / self._watched

    @property
    def calls_per_second(self) -> float:
        return sum(u.answered for u in self.upstreams) / self.seconds

    def window(self, slot: int) -> tuple[float, float]:
        """The freshness over an estimation window after the switch, and its calls per
        second."""
        share = sum(u.windows.get(slot, 0.0) for u in self.upstreams)
        calls = sum(u.window_calls.get(slot, 0) for u in self.upstreams)
        return share / (ESTIMATION_WINDOW * len(self.upstreams)), calls / ESTIMATION_WINDOW


async def _open_store(kind: str, folder: Path, name: str) -> Store:
    """The product's store the bench runs on: the memory store (decision 0055) or a SQLite
    file of its own."""
    if kind == "memory":
        return MemoryStore()
    url = f"sqlite+aiosqlite:///{folder / f'{name}.db'}"
    await upgrade_database(url)
    return await open_sql_store(url)


async def simulate(
    analyst: Analyst,
    settings: Settings,
    means: Sequence[tuple[float, float]],
    seconds: float,
    *,
    seed: int,
    rules: bool,
    folder: Path,
    store_kind: str = "memory",
) -> Outcome:
    """The sources called for `seconds` on the fake clock, the planner steering them."""
    clock = ManualClock(T0)
    store = await _open_store(store_kind, folder, f"{analyst.name}-{seed}-{len(means)}")
    rng = random.Random(seed)
    upstreams = [Upstream(m, seconds / 2, random.Random(rng.random())) for m in means]
    by_name = {f"s{i}": u for i, u in enumerate(upstreams)}
    try:
        declarations = parse_declarations(jobs_document(len(means), rules), JOB, LOOPBACK)
        await apply_declarations(
            store.unit_of_work, None, declarations, JOB, actor=WORKER, now=clock.now()
        )
        desk = build_proposal_desk(settings, store, None)
        planner = PlannerWorker(store, analyst, clock, planner_config(settings), desk=desk)
        while (now := clock.now()) < T0 + timedelta(seconds=seconds):
            t = (now - T0).total_seconds()
            claims = await store.claims.claim_due(now, WORKER, LEASE_SECONDS, BATCH)
            finishes = [
                Finish(c, WORKER, by_name[c.endpoint.name].answer(t), now, LEASE_SECONDS)
                for c in claims
            ]
            for outcome in await store.claims.finish_many(finishes):
                if not isinstance(outcome, Recorded):
                    raise outcome
            while await planner.run_round():
                pass
            due = [e.next_run_at for e in await store.catalog.list_endpoints(JOB) if e.next_run_at]
            clock.advance(max((min(due) - now).total_seconds(), CLOCK_STEP))
    finally:
        await store.close()
    for upstream in upstreams:
        upstream.close(seconds)
    return Outcome(upstreams, seconds)


_EVERY = re.compile(r"^Change rate: changes about every ([\d.e+]+) (s|min|h|d) ", re.MULTILINE)
_UNITS = {"s": 1.0, "min": 60.0, "h": 3600.0, "d": 86_400.0}


def _keep_fresh(_value: Any, brief: Brief) -> list[Call]:
    """A sensible model reading the brief's change rate: call about once per change within
    the clamps, twice as rarely as now when no change was seen; no move under 20 %."""
    hinted = re.search(r"interval ([\d.]+)s until", brief.hints)
    current = float(hinted.group(1)) if hinted else DECLARED
    every = _EVERY.search(brief.text)
    if every is not None:
        target, why = float(every.group(1)) * _UNITS[every.group(2)], "about once per change"
    elif "Change rate: no change seen" in brief.text:
        target, why = current * 2, "no change seen: half as often"
    else:
        return []
    target = min(max(target, MIN_SECONDS), MAX_SECONDS)
    if abs(target - current) <= 0.2 * current:
        return []
    arguments = {"interval_seconds": round(target, 1), "ttl_seconds": 7200, "reason": why}
    return [Call("propose_interval", arguments)]


def _needs(count: int) -> dict[str, Need]:
    return {f"{JOB}/s{i}": Need("version", _keep_fresh) for i in range(count)}


def split_intervals(
    rates: Sequence[float], calls_per_second: float
) -> tuple[list[float], list[float]]:
    """The intervals of the even and of the best split of those calls, for the true rates."""
    sources = [Source(r, MIN_SECONDS, MAX_SECONDS) for r in rates]
    return even_intervals(sources, calls_per_second), best_intervals(sources, calls_per_second)


def split_freshness(rates: Sequence[float], calls_per_second: float) -> tuple[float, float]:
    """The freshness of the even and of the best split of those calls, for the true rates."""
    even, best = split_intervals(rates, calls_per_second)
    return mean_freshness(rates, even), mean_freshness(rates, best)


def mean_freshness(rates: Sequence[float], intervals: Sequence[float]) -> float:
    """The mean freshness of sources changing at `rates` called every `intervals`."""
    return sum(freshness(r, i) for r, i in zip(rates, intervals, strict=True)) / len(rates)


def share_of_way(value: float, even: float, best: float) -> float:
    return (value - even) / (best - even) if best > even else 1.0


PLANNERS = ("freshness", "rules", "llm")
LABELS = {"llm": "llm (scripted)"}
STORIES = {"steady": tuple((m, m) for m in STEADY), "switching": SWITCHING}
STORES = ("memory", "sqlite")
WINDOW_COLUMNS = 6


async def _sit(planner: str, story: str, seconds: float, seed: int, store: str) -> Outcome:
    """One planner through one story, in a folder and (for the scripted model) a server of
    its own."""
    means = STORIES[story]
    async with AsyncExitStack() as resources:
        folder = Path(resources.enter_context(tempfile.TemporaryDirectory(prefix="cronpilot-")))

        async def run(analyst: Analyst, settings: Settings, rules: bool) -> Outcome:
            return await simulate(
                analyst,
                settings,
                means,
                seconds,
                seed=seed,
                rules=rules,
                folder=folder,
                store_kind=store,
            )

        if planner == "freshness":
            return await run(FreshnessAnalyst(), Settings.model_construct(), False)
        if planner == "rules":
            return await run(RulesOnly(), Settings.model_construct(), True)
        server = await resources.enter_async_context(FakeOpenAI(policy(_needs(len(means)))))
        llm = exam_settings(
            Settings.model_construct(llm_base_url=server.base_url, llm_model="scripted")
        )
        # Retries wait in real time: the fake clock stands still while the planner thinks.
        chat = build_chat_model(llm, SystemClock())
        resources.push_async_callback(chat.close)
        return await run(
            LlmAnalyst(chat, llm.planner_max_steps, llm.planner_max_tokens), llm, False
        )


def sit(planner: str, story: str, seconds: float, seed: int, store: str) -> Outcome:
    return asyncio.run(_sit(planner, story, seconds, seed, store))


def _verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


@dataclass(frozen=True, slots=True)
class Choice:
    """What one invocation runs."""

    planners: tuple[str, ...] = PLANNERS
    stories: tuple[str, ...] = tuple(STORIES)
    hours: float = 3.0
    llm_hours: float = 1.0
    seeds: tuple[int, ...] = (7,)
    store: str = "memory"
    jobs: int = 0
    """Processes at once; 0: as many as there are cores."""

    def seconds(self, planner: str) -> float:
        return (self.llm_hours if planner == "llm" else self.hours) * 3600


def steady_share(outcome: Outcome) -> tuple[float, float, float]:
    """The steady story's even and best split of the calls the planner made, and its share of
    the way from even to best."""
    even, best = split_freshness([rate_of(m) for m in STEADY], outcome.calls_per_second)
    return even, best, share_of_way(outcome.fresh, even, best)


def switch_gaps(outcome: Outcome) -> list[float]:
    """The best split's freshness minus the planner's over each whole estimation window after
    the switch, the best split being that of the window's own calls for the new rates."""
    after = [rate_of(m[1]) for m in SWITCHING]
    gaps = []
    for slot in range(int(outcome.seconds / 2 // ESTIMATION_WINDOW)):
        fresh, spent = outcome.window(slot)
        gaps.append(split_freshness(after, spent)[1] - fresh)
    return gaps


def _steady_row(planner: str, seed: int, outcome: Outcome) -> list[str]:
    even, best, share = steady_share(outcome)
    calls = sum(u.calls for u in outcome.upstreams)
    seen = sum(u.changes_seen for u in outcome.upstreams)
    return [
        LABELS.get(planner, planner),
        str(seed),
        f"{outcome.seconds / 3600:g} h",
        f"{outcome.fresh:.1%}",
        f"{outcome.mean_age:.1f} s",
        f"{even:.1%}",
        f"{best:.1%}",
        f"**{share:.2f}**",
        f"{calls:,}",
        f"{calls / max(seen, 1):.1f}",
        f"{min(u.shortest for u in outcome.upstreams):.3g} s",
    ]


def report(choice: Choice) -> None:
    """The chosen planners through the chosen stories for each seed, as many at once as
    `choice.jobs` allows."""
    tasks = [
        (planner, story, seed)
        for planner in choice.planners
        if choice.seconds(planner) > 0
        for story in choice.stories
        for seed in choice.seeds
    ]
    workers = min(len(tasks), choice.jobs or os.cpu_count() or 1)
    with ProcessPoolExecutor(max(workers, 1)) as pool:
        futures = {
            t: pool.submit(sit, t[0], t[1], choice.seconds(t[0]), t[2], choice.store) for t in tasks
        }
        outcomes = {t: f.result() for t, f in futures.items()}
    planners = list(dict.fromkeys(p for p, _, _ in tasks))
    targets: list[str] = []
    if "steady" in choice.stories:
        _steady_report(choice, planners, outcomes, targets)
    if "switching" in choice.stories:
        _switch_report(choice, planners, outcomes, targets)
    for planner in planners:
        shortest = min(
            u.shortest for (p, _, _), o in outcomes.items() if p == planner for u in o.upstreams
        )
        targets.append(
            f"- {LABELS.get(planner, planner)}: shortest gap {shortest:.3g} s "
            f"({_verdict(shortest >= MIN_SECONDS - SLACK)} >= min_interval {MIN_SECONDS:g} s)"
        )
    print("targets:")
    print("\n".join(targets))


Outcomes = dict[tuple[str, str, int], Outcome]


def _steady_report(
    choice: Choice, planners: list[str], outcomes: Outcomes, targets: list[str]
) -> None:
    rows = [
        _steady_row(planner, seed, outcomes[planner, "steady", seed])
        for planner in planners
        for seed in choice.seeds
    ]
    print_table(
        "ten steady sources",
        [
            "planner",
            "seed",
            "simulated",
            "freshness",
            "mean age",
            "even split",
            "best split",
            "share of the way",
            "calls",
            "calls per change seen",
            "shortest gap",
        ],
        rows,
    )
    for planner in planners:
        shares = [steady_share(outcomes[planner, "steady", seed])[2] for seed in choice.seeds]
        mean, least = sum(shares) / len(shares), min(shares)
        targets.append(
            f"- {LABELS.get(planner, planner)}: steady share of the way over seeds "
            f"{','.join(map(str, choice.seeds))}: mean {mean:.3f}, min {least:.3f} "
            f"({_verdict(least >= TARGET_SHARE)} >= {TARGET_SHARE} for every seed)"
        )


def _switch_report(
    choice: Choice, planners: list[str], outcomes: Outcomes, targets: list[str]
) -> None:
    gaps = {
        (planner, seed): switch_gaps(outcomes[planner, "switching", seed])
        for planner in planners
        for seed in choice.seeds
    }
    columns = min(max((len(g) for g in gaps.values()), default=0), WINDOW_COLUMNS)
    rows = []
    for (planner, seed), below in gaps.items():
        cells = [f"{b:.3f}" for b in below[:columns]] + ["–"] * (columns - len(below))
        rows.append([LABELS.get(planner, planner), str(seed), *cells])
        back = any(b <= TARGET_GAP for b in below[:TARGET_WINDOWS])
        shown = len(below) >= TARGET_WINDOWS or back
        targets.append(
            f"- {LABELS.get(planner, planner)} (seed {seed}): after the switch within "
            f"{TARGET_GAP} of the best by window {TARGET_WINDOWS} "
            f"({_verdict(back) if shown else f'not shown: {len(below)} whole windows'})"
        )
    print_table(
        f"rates switched halfway: the best split of each {ESTIMATION_WINDOW / 60:.0f}-min "
        "estimation window's calls minus the freshness reached in it",
        ["planner", "seed", *(f"w{i + 1}" for i in range(columns))],
        rows,
    )


def _names(text: str, known: Sequence[str]) -> tuple[str, ...]:
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    unknown = [name for name in names if name not in known]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"choose from {', '.join(known)}, comma-separated")
    return names


def _seeds(text: str) -> tuple[int, ...]:
    """`1,2,5` or `1-5`."""
    seeds: list[int] = []
    for part in text.split(","):
        first, _, last = part.partition("-")
        seeds.extend(range(int(first), int(last or first) + 1))
    return tuple(seeds)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hours", type=float, default=3.0, help="simulated, per planner")
    parser.add_argument(
        "--llm-hours", type=float, default=1.0, help="for the scripted model (0: not run)"
    )
    parser.add_argument("--seeds", "--seed", type=_seeds, default=(7,), help="e.g. 7, 1,2,3 or 1-5")
    parser.add_argument(
        "--planners",
        type=lambda text: _names(text, PLANNERS),
        default=PLANNERS,
        help=f"comma-separated, of {','.join(PLANNERS)}",
    )
    parser.add_argument(
        "--stories",
        type=lambda text: _names(text, tuple(STORIES)),
        default=tuple(STORIES),
        help=f"comma-separated, of {','.join(STORIES)}",
    )
    parser.add_argument("--store", choices=STORES, default="memory")
    parser.add_argument("--jobs", type=int, default=0, help="processes at once (0: the cores)")
    args = parser.parse_args(argv)
    choice = Choice(
        args.planners, args.stories, args.hours, args.llm_hours, args.seeds, args.store, args.jobs
    )
    print_header(
        f"python -m bench.freshness --hours {choice.hours:g} --llm-hours {choice.llm_hours:g} "
        f"--seeds {','.join(map(str, choice.seeds))} --planners {','.join(choice.planners)} "
        f"--stories {','.join(choice.stories)} --store {choice.store}"
    )
    report(choice)


if __name__ == "__main__":
    main()
