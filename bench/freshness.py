"""Freshness: does a planner spend its calls where they keep copies fresh?

    python -m bench.freshness [--hours 3] [--llm-hours 1] [--seed 7]

A simulated hour costs a CPU minute or two per planner and story (the planners' own rounds and
the store's writes, as in production): `--hours 24` tells a day. The six runs (three planners,
two stories) go on as many cores as there are.

Ten sources that change at random (Poisson) with known mean times between changes, from
seconds to a day and some never, each an endpoint of one job declared every 20 s within
[5 s, 1 h]; 5 % of the calls fail. Each planner runs as the product runs it, on a fake clock:
the store's claim and fenced finish (a SQLite database of its own; the sources answer in
process, no HTTP), then planner rounds until none is left, then the clock jumps to the next
due call. The planners:

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
from cronpilot.harness.exams.evaluation import exam_settings
from cronpilot.harness.exams.runner import RulesOnly
from cronpilot.planner.freshness import HISTORY_RUNS, FreshnessAnalyst
from cronpilot.planner.session import Analyst, LlmAnalyst
from cronpilot.planner.worker import PlannerWorker
from cronpilot.usecases.declarations import apply_declarations
from tests.support.fake_openai_server import Call, FakeOpenAI
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

    def _after_switch(self, start: float, end: float, share: float) -> None:
        """A gap's fresh seconds after the switch, each estimation window its own part (a
        30-min gap ending early in a window is mostly the window's before)."""
        slot = int((end - self.switch) // ESTIMATION_WINDOW)
        self.window_calls[slot] = self.window_calls.get(slot, 0) + 1
        while end > start:
            edge = max(start, self.switch + slot * ESTIMATION_WINDOW)
            self.windows[slot] = self.windows.get(slot, 0.0) + share * (end - edge)
            end, slot = edge, slot - 1

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


async def simulate(
    analyst: Analyst,
    settings: Settings,
    means: Sequence[tuple[float, float]],
    seconds: float,
    *,
    seed: int,
    rules: bool,
    folder: Path,
) -> Outcome:
    """The sources called for `seconds` on the fake clock, the planner steering them."""
    clock = ManualClock(T0)
    url = f"sqlite+aiosqlite:///{folder / f'{analyst.name}-{seed}-{len(means)}.db'}"
    await upgrade_database(url)
    store = await open_sql_store(url)
    rng = random.Random(seed)
    upstreams = [Upstream(m, seconds / 2, random.Random(rng.random())) for m in means]
    by_name = {f"s{i}": u for i, u in enumerate(upstreams)}
    try:
        declarations = parse_declarations(jobs_document(len(means), rules), JOB, LOOPBACK)
        await apply_declarations(
            store.unit_of_work, None, declarations, JOB, actor=WORKER, now=clock.now()
        )
        planner = PlannerWorker(
            store,
            analyst,
            clock,
            planner_config(settings),
            desk=build_proposal_desk(settings, store, None),
        )
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
            clock.advance(max((min(due) - now).total_seconds(), 0.001))
    finally:
        await store.close()
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


PLANNERS = ("freshness", "rules", "llm (scripted)")
STORIES = {"steady": tuple((m, m) for m in STEADY), "switching": SWITCHING}


async def _sit(planner: str, story: str, seconds: float, seed: int) -> Outcome:
    """One planner through one story, in a folder and (for the scripted model) a server of
    its own."""
    means = STORIES[story]
    async with AsyncExitStack() as resources:
        folder = Path(resources.enter_context(tempfile.TemporaryDirectory(prefix="cronpilot-")))
        if planner == "freshness":
            return await simulate(
                FreshnessAnalyst(),
                Settings.model_construct(),
                means,
                seconds,
                seed=seed,
                rules=False,
                folder=folder,
            )
        if planner == "rules":
            return await simulate(
                RulesOnly(),
                Settings.model_construct(),
                means,
                seconds,
                seed=seed,
                rules=True,
                folder=folder,
            )
        server = await resources.enter_async_context(FakeOpenAI(policy(_needs(len(means)))))
        llm = exam_settings(
            Settings.model_construct(llm_base_url=server.base_url, llm_model="scripted")
        )
        # Retries wait in real time: the fake clock stands still while the planner thinks.
        chat = build_chat_model(llm, SystemClock())
        resources.push_async_callback(chat.close)
        analyst = LlmAnalyst(chat, llm.planner_max_steps, llm.planner_max_tokens)
        return await simulate(analyst, llm, means, seconds, seed=seed, rules=False, folder=folder)


def sit(planner: str, story: str, seconds: float, seed: int) -> Outcome:
    return asyncio.run(_sit(planner, story, seconds, seed))


def _verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def report(hours: float, llm_hours: float, seed: int) -> None:
    """Every planner through both stories, as many at once as there are cores."""
    spans = {p: (llm_hours if p.startswith("llm") else hours) * 3600 for p in PLANNERS}
    tasks = [(p, story) for p in PLANNERS if spans[p] > 0 for story in STORIES]
    with ProcessPoolExecutor(min(len(tasks), os.cpu_count() or 1)) as pool:
        futures = {t: pool.submit(sit, *t, spans[t[0]], seed) for t in tasks}
        outcomes = {t: f.result() for t, f in futures.items()}
    steady_rows, switch_rows, targets = [], [], []
    for planner in dict.fromkeys(p for p, _ in tasks):
        seconds = spans[planner]
        steady, switched = outcomes[planner, "steady"], outcomes[planner, "switching"]
        even, best = split_freshness([rate_of(m) for m in STEADY], steady.calls_per_second)
        share = share_of_way(steady.fresh, even, best)
        calls = sum(u.calls for u in steady.upstreams)
        seen = sum(u.changes_seen for u in steady.upstreams)
        shortest = min(u.shortest for u in (*steady.upstreams, *switched.upstreams))
        steady_rows.append(
            [
                planner,
                f"{seconds / 3600:g} h",
                f"{steady.fresh:.1%}",
                f"{steady.mean_age:.1f} s",
                f"{even:.1%}",
                f"{best:.1%}",
                f"**{share:.2f}**",
                f"{calls:,}",
                f"{calls / max(seen, 1):.1f}",
                f"{shortest:.3g} s",
            ]
        )
        after = [rate_of(m[1]) for m in SWITCHING]
        slots = int(seconds / 2 // ESTIMATION_WINDOW)
        below = []
        for slot in range(min(slots, 4)):
            # The best split of the calls the planner made in that window, for the new rates.
            fresh, spent = switched.window(slot)
            below.append(split_freshness(after, spent)[1] - fresh)
        cells = [f"{b:.3f}" for b in below] + ["–"] * (4 - len(below))
        switch_rows.append([planner, *cells])
        back = any(b <= TARGET_GAP for b in below[:TARGET_WINDOWS])
        targets.append(
            f"- {planner}: steady {share:.3f} of the way "
            f"({_verdict(share >= TARGET_SHARE)} >= {TARGET_SHARE}); after the switch within "
            f"{TARGET_GAP} of the best by window {TARGET_WINDOWS} ({_verdict(back)}); "
            f"shortest gap {shortest:.3g} s "
            f"({_verdict(shortest >= MIN_SECONDS - 1e-6)} >= min_interval {MIN_SECONDS:g} s)"
        )
    print_table(
        "ten steady sources",
        [
            "planner",
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
        steady_rows,
    )
    print_table(
        f"rates switched halfway: the best split of each {ESTIMATION_WINDOW / 60:.0f}-min "
        "estimation window's calls minus the freshness reached in it",
        ["planner", *(f"w{i + 1}" for i in range(4))],
        switch_rows,
    )
    print("targets:")
    print("\n".join(targets))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hours", type=float, default=3.0, help="simulated, per planner")
    parser.add_argument(
        "--llm-hours", type=float, default=1.0, help="for the scripted model (0: not run)"
    )
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    print_header(
        f"python -m bench.freshness --hours {args.hours:g} --llm-hours {args.llm_hours:g} "
        f"--seed {args.seed}"
    )
    report(args.hours, args.llm_hours, args.seed)


if __name__ == "__main__":
    main()
