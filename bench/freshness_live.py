"""Freshness in real time: issue 31's "Done when".

    python -m bench.freshness_live [--minutes 12] [--warm-up 4] [--seed 7] [--keep DIR]
    python -m bench.freshness_live --report --keep DIR [--warm-up 6]

The ten sources of `bench.freshness` (`STEADY`: mean times between changes of 3 s to a day,
three never), each a `bench.freshness.Upstream` answering GET /s0 … /s9 on 127.0.0.1 at the
real seconds since the start (`--failures` of the calls fail, 5 % as on the fake clock), and
that benchmark's job pointed at them (every 20 s within [5 s, 1 h], planner mode auto) applied
to a temporary SQLite database. `cronpilot scheduler --with-planner` runs as a process with no
LLM configured, so its planner is the built-in freshness planner (`bench.left_alone` starts it
the same way). Nobody touches it for `--minutes`.

The figures come from the sources' side (when each was called, and what it answered): the
freshness the copies reached (expected, for the true rate, over every second of the stretch
once a copy had a first answer; each source weighs the same, as in the splits), the same
calls spread evenly and split best for the true rates, the share of the way from even to
best, calls per change seen and the shortest gap between two calls of one source — for the
whole run and from `--warm-up` minutes on (the planner starts knowing nothing) — and from the
store: the planner's interval changes, the most of them within a dwell of one endpoint, the
steps that went back against the one before within its dwell, the shortest gap between two
slots and how late calls went out. `--keep` keeps the calls, database and log; `--report`
prints a kept trial's figures again.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path

from aiohttp import web

from bench.freshness import (
    FAILURE_SHARE,
    JOB,
    MIN_SECONDS,
    STEADY,
    TARGET_SHARE,
    Upstream,
    jobs_document,
    mean_freshness,
    rate_of,
    share_of_way,
    split_intervals,
)
from bench.left_alone import Cli, cli_env, log_errors, most_within, scheduler_running
from bench.support import print_header, print_table
from cronpilot.adapters.settings import Settings
from cronpilot.adapters.sql import open_sql_store
from cronpilot.domain.model import Endpoint
from cronpilot.domain.planning.change_rate import current_interval, duration_text, freshness
from cronpilot.domain.planning.planning import Proposal, ProposalKind, ProposalStatus
from cronpilot.domain.schedule.schedule import baseline_period

DWELL = timedelta(seconds=Settings.model_construct().rules_dwell_seconds)
"""How long any applied change stands before another may replace it (decision 0048)."""

Log = Sequence[tuple[float, bool | None]]
"""A source's calls (`Upstream.log`): seconds since the start, and whether the answer changed
since the previous answer (None: the call failed)."""


@dataclass(frozen=True, slots=True)
class Span:
    """One source's calls over a stretch of the run."""

    fresh_seconds: float
    """Expected fresh seconds of its copy, for the true rate, within the stretch."""
    watched_seconds: float
    """The stretch's seconds from the copy's first answer on."""
    calls: int
    answered: int
    changes_seen: int
    shortest_gap: float
    """Between two calls (answered or not); infinite with fewer than two."""

    @property
    def fresh(self) -> float:
        return self.fresh_seconds / self.watched_seconds if self.watched_seconds > 0 else 1.0


def _fresh_between(rate: float, start: float, end: float) -> float:
    """Expected fresh seconds between `start` and `end` seconds after an answer: the copy is
    still fresh t seconds after it with probability e^(-λt)."""
    return freshness(rate, end) * end - freshness(rate, start) * start


def span_of(log: Log, rate: float, since: float, until: float) -> Span:
    """What the calls of a source changing at `rate` came to between `since` and `until`: its
    copy's freshness over every second of the stretch once it had a first answer (a gap that
    straddles an end counts its part within), as `bench.freshness` counts whole gaps."""
    answers = [t for t, changed in log if changed is not None and t <= until]
    calls = [(t, changed) for t, changed in log if since <= t <= until]
    start = max([since, *answers[:1]])
    fresh = 0.0
    for answered, after in pairwise([*answers, until]):
        lower, upper = max(answered, start), min(after, until)
        if upper > lower:
            fresh += _fresh_between(rate, lower - answered, upper - answered)
    return Span(
        fresh_seconds=fresh,
        watched_seconds=max(until - start, 0.0) if answers else 0.0,
        calls=len(calls),
        answered=sum(changed is not None for _, changed in calls),
        changes_seen=sum(bool(changed) for _, changed in calls),
        shortest_gap=min((b - a for (a, _), (b, _) in pairwise(calls)), default=math.inf),
    )


@dataclass(frozen=True, slots=True)
class Figures:
    """The sources' calls over one stretch of the run, against the even and the best split of
    the same calls for the true rates."""

    seconds: float
    fresh: float
    """The mean of the sources' freshness, as the splits' figures are."""
    even: float
    best: float
    calls: int
    calls_per_second: float
    """Answered calls per second, the budget the splits spend."""
    changes_seen: int
    shortest_gap: float
    spans: list[Span]
    even_intervals: list[float]
    best_intervals: list[float]

    @property
    def share(self) -> float:
        return share_of_way(self.fresh, self.even, self.best)

    @property
    def calls_per_change(self) -> float:
        return self.calls / max(self.changes_seen, 1)


def figures_of(logs: Sequence[Log], rates: Sequence[float], since: float, until: float) -> Figures:
    """The figures of the sources' calls from `since` until `until` (seconds since the start).
    Each source weighs the same: over a few minutes, weighing them by the seconds their copies
    were watched would weigh the rarely called (the quiet, fresh ones) less."""
    spans = [span_of(log, rate, since, until) for log, rate in zip(logs, rates, strict=True)]
    per_second = sum(s.answered for s in spans) / (until - since)
    even, best = split_intervals(rates, per_second)
    return Figures(
        seconds=until - since,
        fresh=sum(s.fresh for s in spans) / len(spans),
        even=mean_freshness(rates, even),
        best=mean_freshness(rates, best),
        calls=sum(s.calls for s in spans),
        calls_per_second=per_second,
        changes_seen=sum(s.changes_seen for s in spans),
        shortest_gap=min(s.shortest_gap for s in spans),
        spans=spans,
        even_intervals=even,
        best_intervals=best,
    )


Change = tuple[datetime, float]
"""An applied interval change: when, and the interval it set."""


def changes_of(proposals: Sequence[Proposal]) -> dict[str, list[Change]]:
    """Each endpoint's applied interval changes (by endpoint id), oldest first."""
    found: defaultdict[str, list[Change]] = defaultdict(list)
    for p in proposals:
        if (
            p.status is ProposalStatus.APPLIED
            and p.kind is ProposalKind.INTERVAL
            and p.interval_seconds is not None
        ):
            found[p.endpoint_id].append((p.decided_at or p.created_at, p.interval_seconds))
    return {endpoint: sorted(changes) for endpoint, changes in found.items()}


def reversals(changes: Sequence[Change], baseline: float, dwell: timedelta) -> int:
    """The changes that stepped back against the one before (faster after slower, or slower
    after faster) within `dwell` of it; the first change moved from `baseline`."""
    count, before, last_at, last_way = 0, baseline, None, 0.0
    for at, interval in changes:
        way = interval - before
        if last_at is not None and at - last_at < dwell and way * last_way < 0:
            count += 1
        before, last_at, last_way = interval, at, way
    return count


class Sources:
    """The upstreams served over HTTP: GET /{name} is answered by the named one at the seconds
    since `started` (monotonic)."""

    def __init__(self, upstreams: dict[str, Upstream]) -> None:
        self.upstreams = upstreams
        self.started = time.monotonic()
        self._runner: web.AppRunner | None = None

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    async def _answer(self, request: web.Request) -> web.Response:
        upstream = self.upstreams.get(request.match_info["name"])
        if upstream is None:
            raise web.HTTPNotFound()
        response = upstream.answer(self.elapsed())
        return web.json_response(response.body, status=response.status_code or 200)

    async def start(self) -> str:
        """Serve on a free port of 127.0.0.1; returns the base URL."""
        app = web.Application()
        app.add_routes([web.get("/{name}", self._answer)])
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.started = time.monotonic()
        return f"http://127.0.0.1:{port}"

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()


def _seconds(value: float) -> str:
    return "–" if value == math.inf else duration_text(value)


def _mean(value: float) -> str:
    return "never" if value == math.inf else duration_text(value)


def _row(label: str, f: Figures) -> list[str]:
    return [
        label,
        f"{f.seconds / 60:.1f} min",
        f"{f.fresh:.1%}",
        f"{f.even:.1%}",
        f"{f.best:.1%}",
        f"**{f.share:.2f}**",
        f"{f.calls:,}",
        f"{f.calls_per_second * 3600:,.0f}/h",
        f"{f.calls_per_change:.1f}",
        f"{f.shortest_gap:.3g} s",
    ]


@dataclass(frozen=True)
class Trial:
    """What a trial left: the sources' calls, the store's proposals and sessions, the log."""

    logs: dict[str, list[tuple[float, bool | None]]]
    """Each source's calls (`Upstream.log`), by endpoint name."""
    started: float
    until: float
    proposals: list[Proposal]
    sessions: int
    endpoints: dict[str, Endpoint]
    log: Path
    returncode: int | None
    failures: float
    slot_gap: float
    """The shortest gap between two slots of one endpoint (the store's runs): what the
    scheduler planned, where the calls' gaps also carry how late each went out."""
    lateness: tuple[float, float, float]
    """Seconds from a call's slot to its start: the median, the 95th percentile, the most (a
    slot the min clamp pushed later counts its wait)."""


CALLS_FILE, DATABASE_FILE, LOG_FILE = "calls.json", "freshness-live.db", "scheduler.log"


async def read_trial(home: Path, returncode: int | None = None) -> Trial:
    """A trial from what it left in `home` (`--keep`): its calls file, database and log."""
    calls = json.loads((home / CALLS_FILE).read_text(encoding="utf-8"))
    store = await open_sql_store(f"sqlite+aiosqlite:///{home / DATABASE_FILE}")
    try:
        proposals = await store.planner.list_proposals(limit=1_000_000)
        sessions = await store.planner.list_sessions(limit=1_000_000)
        endpoints = {e.name: e for e in await store.catalog.list_endpoints(JOB)}
        runs = [await store.runs.list_runs(e.id, 1_000_000) for e in endpoints.values()]
    finally:
        await store.close()
    slots = [sorted(r.slot_at for r in each) for each in runs]
    slot_gap = min(
        ((b - a).total_seconds() for each in slots for a, b in pairwise(each)), default=math.inf
    )
    late = sorted((r.started_at - r.slot_at).total_seconds() for each in runs for r in each)
    logs = {name: [(t, changed) for t, changed in log] for name, log in calls["logs"].items()}
    return Trial(
        logs,
        calls["started"],
        calls["until"],
        proposals,
        len(sessions),
        endpoints,
        home / LOG_FILE,
        returncode,
        calls["failures"],
        slot_gap,
        (late[len(late) // 2], late[int(len(late) * 0.95)], late[-1]),
    )


async def trial(minutes: float, seed: int, failures: float, home: Path) -> Trial:
    """The sources served and the scheduler left alone with them for `minutes`, what it left
    kept in `home`."""
    url = f"sqlite+aiosqlite:///{home / DATABASE_FILE}"
    rng = random.Random(seed)
    upstreams = {
        f"s{i}": Upstream((m, m), math.inf, random.Random(rng.random()), failures)
        for i, m in enumerate(STEADY)
    }
    sources = Sources(upstreams)
    base = await sources.start()
    cli = Cli(cli_env(home, url), home)
    jobs = home / "jobs.yaml"
    jobs.write_text(jobs_document(len(STEADY), rules=False, base=base), encoding="utf-8")
    try:
        await cli("db", "upgrade")
        await cli("apply", "-f", str(jobs))
        async with scheduler_running(cli, home / LOG_FILE) as scheduler:
            started = sources.elapsed()
            await asyncio.sleep(minutes * 60)
        until = sources.elapsed()
    finally:
        await sources.stop()
    logs = {name: u.log for name, u in upstreams.items()}
    calls = {"started": started, "until": until, "failures": failures, "logs": logs}
    (home / CALLS_FILE).write_text(json.dumps(calls), encoding="utf-8")
    return await read_trial(home, scheduler.returncode)


def _source_rows(run: Trial, whole: Figures, after: Figures) -> list[list[str]]:
    now = datetime.now(UTC)
    changes = changes_of(run.proposals)
    rows = []
    for index, (name, mean) in enumerate(zip(run.logs, STEADY, strict=True)):
        endpoint = run.endpoints.get(name)
        moves = [] if endpoint is None else changes.get(endpoint.id, [])
        span, best = after.spans[index], after.best_intervals[index]
        rows.append(
            [
                name,
                _mean(mean),
                f"{whole.spans[index].calls}",
                f"{span.calls}",
                _seconds(after.seconds / span.answered if span.answered else math.inf),
                "–" if endpoint is None else duration_text(current_interval(endpoint, now)),
                duration_text(after.even_intervals[index]),
                duration_text(best),
                f"{span.fresh:.1%}",
                f"{freshness(rate_of(mean), best):.1%}",
                f"{len(moves)}",
            ]
        )
    return rows


def report(run: Trial, warm_up: float) -> None:
    rates = [rate_of(m) for m in STEADY]
    logs = list(run.logs.values())
    whole = figures_of(logs, rates, run.started, run.until)
    after = figures_of(logs, rates, run.started + warm_up * 60, run.until)
    applied = sum(p.status is ProposalStatus.APPLIED for p in run.proposals)
    print(
        f"{(run.until - run.started) / 60:.1f} min of `cronpilot scheduler --with-planner` "
        f"(built-in freshness planner, no LLM), {len(STEADY)} sources, {run.failures:.0%} of "
        f"calls failing; {run.sessions} planner sessions stored, {applied} proposals applied"
    )
    print_table(
        "ten steady sources in real time",
        [
            "stretch",
            "span",
            "freshness",
            "even split",
            "best split",
            "share of the way",
            "calls",
            "answered",
            "calls per change seen",
            "shortest gap",
        ],
        [_row("whole run", whole), _row(f"after {warm_up:g} min", after)],
    )
    print_table(
        f"per source, after {warm_up:g} min (even and best: of those calls, for the true rates)",
        [
            "source",
            "changes every",
            "calls",
            "calls after",
            "mean gap after",
            "interval at the end",
            "even",
            "best",
            "freshness after",
            "at best",
            "interval changes",
        ],
        _source_rows(run, whole, after),
    )
    now = datetime.now(UTC)
    baselines = {
        e.id: baseline_period(e.spec.schedule, now).total_seconds() for e in run.endpoints.values()
    }
    changes = changes_of(run.proposals)
    crowded = max((most_within([at for at, _ in c], DWELL) for c in changes.values()), default=0)
    back = sum(reversals(c, baselines.get(e, 0.0), DWELL) for e, c in changes.items())
    tracebacks, errors = log_errors(run.log)
    print(
        f"interval changes applied: {sum(len(c) for c in changes.values())}; most of one "
        f"endpoint within a dwell ({DWELL.total_seconds():.0f} s): {crowded}; steps back "
        f"against the one before within its dwell: {back}"
    )
    print(
        f"shortest gap between two slots of one endpoint (the store's runs): "
        f"{run.slot_gap:.3g} s; calls went out after their slots by (median / p95 / most) "
        + " / ".join(f"{seconds:.2f} s" for seconds in run.lateness)
    )
    status = "not run (--report)" if run.returncode is None else run.returncode
    print(f"scheduler exit status: {status}")
    print(f"log: {tracebacks} tracebacks, {len(errors)} ERROR lines ({run.log})")
    for line in errors[:10]:
        print(f"  {line}")
    print("targets:")
    for label, f in (("whole run", whole), (f"after {warm_up:g} min", after)):
        verdict = "met" if f.share >= TARGET_SHARE else "MISSED"
        print(f"- {label}: {f.share:.3f} of the way ({verdict} >= {TARGET_SHARE})")
    # min_interval is the governor's between slots; a call that went out late comes sooner
    # after the one before (the calls' own shortest gap is printed above).
    gap = "met" if run.slot_gap >= MIN_SECONDS - 1e-3 else "MISSED"
    print(
        f"- shortest gap between slots {run.slot_gap:.3g} s "
        f"({gap} >= min_interval {MIN_SECONDS:g} s)"
    )
    print(f"- steps back within the dwell: {back} ({'met' if back == 0 else 'MISSED'} == 0)")


async def _run(args: argparse.Namespace, home: Path) -> None:
    if args.report:
        report(await read_trial(home), args.warm_up)
        return
    report(await trial(args.minutes, args.seed, args.failures, home), args.warm_up)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=12, help="how long to leave it alone")
    parser.add_argument(
        "--warm-up", type=float, default=4, help="minutes before the second stretch's figures"
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--failures", type=float, default=FAILURE_SHARE, help="share of calls")
    parser.add_argument(
        "--keep", type=Path, default=None, help="a folder to keep the database and log in"
    )
    parser.add_argument(
        "--report",
        action="store_true",
        help="no trial: the figures of the one kept in --keep, another --warm-up perhaps",
    )
    args = parser.parse_args(argv)
    if args.report and args.keep is None:
        parser.error("--report needs --keep DIR")
    print_header(
        f"python -m bench.freshness_live --minutes {args.minutes:g} --warm-up {args.warm_up:g} "
        f"--seed {args.seed} --failures {args.failures:g}"
    )
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
        asyncio.run(_run(args, args.keep))
        return
    with tempfile.TemporaryDirectory(prefix="cronpilot-freshness-live-") as folder:
        asyncio.run(_run(args, Path(folder)))


if __name__ == "__main__":
    main()
