"""Left alone: the trial of issue 21's "Done when", in real time.

    python -m bench.left_alone [--minutes 10] [--every 5]

Starts the endpoint simulator on 127.0.0.1, applies the example jobs and `EXTRA_JOBS` (a
failing endpoint, an always-changing one, a never-changing one, and a rules endpoint following
a queue whose depth swings every 40 s) to a temporary SQLite database, and runs `cronpilot
scheduler --with-planner` (built-in planner and rules) as a process, its log in a file. Every
`--every` seconds an admin lists the pending proposals (`cronpilot proposals list --status
pending --json`) and rejects each (`cronpilot proposals reject ID --reason ...`). At the end
it prints the trial's figures, as `tests/e2e/test_left_alone.py` asserts them on a fake clock:
rejected changes proposed or applied again within an hour, the most pending proposals one
endpoint had at once, the rules endpoints' changes within two minutes, the stored sessions of
one endpoint within a minute, and the ERROR lines and tracebacks in the log.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from itertools import pairwise
from pathlib import Path

import yaml

from bench.support import print_header
from cronpilot.adapters.jobs_file import example_jobs_file
from cronpilot.adapters.sql import open_sql_store
from cronpilot.domain.planning.planning import (
    AnalysisSession,
    Proposal,
    ProposalKind,
    ProposalStatus,
)
from cronpilot.domain.rules.rule_firing import RULES_PLANNER
from cronpilot.harness.simulator import Simulator

ROOT = Path(__file__).resolve().parents[1]
COOL_DOWN = timedelta(hours=1)
"""How long a rejected change must not come back."""
SAME_VALUE = 0.10
"""Values within this share of each other are the same change."""
RULE_DWELL = timedelta(minutes=2)
"""A rules endpoint changes at most once within this."""
SESSION_SPACING = timedelta(minutes=1)
"""At most one stored session per endpoint within this."""
NOT_OFFERED = frozenset({ProposalStatus.REFUSED, ProposalStatus.DROPPED})
"""Proposals stopped before an admin or a schedule saw them: held back, not made again."""
SWINGING = "left-alone-queue/drainer"
"""The rules endpoint following the swinging queue."""
EXTRA_JOBS = """
jobs:
  - name: left-alone
    description: A new user's own endpoints, the planner left to judge them (graded).
    endpoints:
      - name: failing
        description: An API that answers 500 to every call.
        url: ${SIMULATOR_URL}/troubles/failing
        interval: 2s
        min_interval: 1s
        max_interval: 1m
      - name: changing
        description: A price that changes on every call.
        url: ${SIMULATOR_URL}/troubles/changing
        interval: 5s
        min_interval: 1s
        max_interval: 5m
      - name: steady
        description: Yesterday's report, the same all day.
        url: ${SIMULATOR_URL}/reports/daily
        interval: 5s
        min_interval: 1s
        max_interval: 5m
  - name: left-alone-queue
    description: A queue whose depth swings every 40 s, and a drainer its rules pace.
    planner_mode: auto
    endpoints:
      - name: depth
        description: Watch the queue depth; the drainer's rules read it.
        url: ${SIMULATOR_URL}/troubles/swinging
        interval: 5s
        planner_mode: "off"
      - name: drainer
        description: Drain a batch, often while the queue is deep.
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
"""
REJECTION = "left alone: the admin turns every proposal down"


def left_alone_jobs() -> str:
    """The example jobs and `EXTRA_JOBS`, as one jobs file."""
    examples = yaml.safe_load(example_jobs_file().read_text(encoding="utf-8"))
    extra = yaml.safe_load(EXTRA_JOBS)
    return yaml.safe_dump({"jobs": examples["jobs"] + extra["jobs"]}, sort_keys=False)


# --- the figures --------------------------------------------------------------------------------


def _value(proposal: Proposal) -> float | None:
    """What a change sets: an interval, or how far ahead a next time or a pause's end lies."""
    if proposal.kind is ProposalKind.INTERVAL:
        return proposal.interval_seconds
    if proposal.at is not None:
        return (proposal.at - proposal.created_at).total_seconds()
    return None


def same_change(a: Proposal, b: Proposal) -> bool:
    """Same endpoint, kind and value within `SAME_VALUE` (issue 21, item 1)."""
    if a.endpoint_id != b.endpoint_id or a.kind is not b.kind:
        return False
    first, second = _value(a), _value(b)
    if first is None or second is None:
        return first is second
    return abs(first - second) <= SAME_VALUE * max(abs(first), abs(second))


def _moment(at: datetime, start: datetime) -> str:
    return f"{(at - start).total_seconds():.0f} s"


def repeated_rejections(
    proposals: Sequence[Proposal], refs: Mapping[str, str], start: datetime
) -> list[str]:
    """Each proposal that made a rejected change again (pending, applied or decided later)
    within `COOL_DOWN` of the rejection, oldest first, in words (once, against the latest
    rejection it repeats)."""
    rejected = [
        p for p in proposals if p.status is ProposalStatus.REJECTED and p.decided_at is not None
    ]
    found = []
    for again in sorted(proposals, key=lambda p: p.created_at):
        if again.status in NOT_OFFERED:
            continue
        repeated = [
            r
            for r in rejected
            if r.id != again.id
            and r.decided_at is not None
            and r.decided_at < again.created_at <= r.decided_at + COOL_DOWN
            and same_change(r, again)
        ]
        if repeated:
            latest = max(repeated, key=lambda r: r.decided_at or start)
            after = again.created_at - (latest.decided_at or start)
            found.append(
                f"{refs.get(again.endpoint_id, '?')}: {again.kind.value} {_value(again)} by "
                f"{again.proposed_by} at {_moment(again.created_at, start)} "
                f"({again.status.value}), {after.total_seconds():.0f} s after "
                f"{latest.kind.value} {_value(latest)} was rejected"
            )
    return found


def most_within(times: Iterable[datetime], span: timedelta) -> int:
    """The most of `times` within any stretch shorter than `span`."""
    ordered = sorted(times)
    most, first = 0, 0
    for last, at in enumerate(ordered):
        while at - ordered[first] >= span:
            first += 1
        most = max(most, last - first + 1)
    return most


def rules_changes(
    proposals: Sequence[Proposal], refs: Mapping[str, str]
) -> dict[str, list[datetime]]:
    """When each endpoint's rules changed its schedule (their proposals applied)."""
    changes: defaultdict[str, list[datetime]] = defaultdict(list)
    for p in proposals:
        if p.proposed_by == RULES_PLANNER and p.status is ProposalStatus.APPLIED:
            changes[refs.get(p.endpoint_id, "?")].append(p.decided_at or p.created_at)
    return {ref: sorted(times) for ref, times in changes.items()}


def shortest_gap(times: Sequence[datetime]) -> float | None:
    gaps = [(b - a).total_seconds() for a, b in pairwise(times)]
    return min(gaps) if gaps else None


@dataclass
class PendingWatch:
    """The most pending proposals each endpoint had at once, as seen at each look."""

    most: Counter[str] = field(default_factory=Counter)
    seen_at: dict[str, str] = field(default_factory=dict)

    def look(self, pending_refs: Iterable[str], when: str) -> None:
        for ref, count in Counter(pending_refs).items():
            if count > self.most[ref]:
                self.most[ref] = count
                self.seen_at[ref] = when

    @property
    def highest(self) -> tuple[int, str]:
        if not self.most:
            return 0, "-"
        ref, count = self.most.most_common(1)[0]
        return count, f"{ref} at {self.seen_at[ref]}"


@dataclass(frozen=True)
class Figures:
    repeated: list[str]
    most_pending: tuple[int, str]
    rules: dict[str, list[datetime]]
    sessions: dict[str, int]
    """Per endpoint, the most stored sessions that proposed nothing within `SESSION_SPACING`
    (a session that made a proposal is always stored: it is the proposal's record)."""
    stored_sessions: int
    per_endpoint: dict[str, int]
    """Per endpoint, all its stored sessions."""

    def lines(self, start: datetime) -> list[str]:
        busiest = max(self.sessions.items(), key=lambda item: item[1], default=("-", 0))
        most = max(self.per_endpoint.items(), key=lambda item: item[1], default=("-", 0))
        lines = [
            f"rejected changes made again within {COOL_DOWN}: {len(self.repeated)}",
            *(f"  {line}" for line in self.repeated[:20]),
            f"most pending proposals of one endpoint at once: {self.most_pending[0]} "
            f"({self.most_pending[1]})",
            f"stored sessions: {self.stored_sessions}; most of one endpoint: {most[1]} "
            f"({most[0]}); most that proposed nothing within "
            f"{SESSION_SPACING.total_seconds():.0f} s: {busiest[1]} ({busiest[0]})",
            f"rules changes (applied), most within {RULE_DWELL.total_seconds():.0f} s, "
            "shortest gap:",
        ]
        for ref, times in sorted(self.rules.items()):
            gap = shortest_gap(times)
            lines.append(
                f"  {ref}: {len(times)} changes, {most_within(times, RULE_DWELL)} within "
                f"{RULE_DWELL.total_seconds():.0f} s, shortest gap "
                + ("-" if gap is None else f"{gap:.0f} s")
            )
        return lines


def figures(
    proposals: Sequence[Proposal],
    sessions: Sequence[AnalysisSession],
    refs: Mapping[str, str],
    pending: PendingWatch,
    start: datetime,
) -> Figures:
    proposing = {p.session_id for p in proposals if p.session_id is not None}
    per_endpoint: Counter[str] = Counter()
    idle: defaultdict[str, list[datetime]] = defaultdict(list)
    for s in sessions:
        ref = refs.get(s.endpoint_id, "?")
        per_endpoint[ref] += 1
        if s.id not in proposing:
            idle[ref].append(s.started_at)
    return Figures(
        repeated_rejections(proposals, refs, start),
        pending.highest,
        rules_changes(proposals, refs),
        {ref: most_within(times, SESSION_SPACING) for ref, times in idle.items()},
        len(sessions),
        dict(per_endpoint),
    )


# --- the real-time trial ------------------------------------------------------------------------


@dataclass(frozen=True)
class Cli:
    env: dict[str, str]
    home: Path

    async def __call__(self, *args: str) -> str:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "cronpilot.adapters.cli.entry",
            *args,
            cwd=self.home,
            env=self.env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await process.communicate()
        if process.returncode != 0:
            raise RuntimeError(
                f"cronpilot {' '.join(args)} exited {process.returncode}: {err.decode()}"
            )
        return out.decode()


async def admin_looks(cli: Cli, watch: PendingWatch, elapsed: float) -> int:
    """One look of the admin: every pending proposal rejected; returns how many."""
    pending = json.loads(
        await cli("proposals", "list", "--status", "pending", "--limit", "1000", "--json")
    )
    watch.look([p["endpoint"] for p in pending], f"{elapsed:.0f} s")
    for proposal in pending:
        try:
            await cli("proposals", "reject", proposal["id"], "--reason", REJECTION)
        except RuntimeError as error:
            # Decided meanwhile (expired, superseded): the admin moves on.
            print(f"  {error}".rstrip(), file=sys.stderr)
    return len(pending)


def cli_env(home: Path, url: str, **extra: str) -> dict[str, str]:
    """The environment of `cronpilot` processes on the database at `url`, at home in `home`
    (its secret key there), allowed to call 127.0.0.1, and nothing of the caller's
    `CRONPILOT_` settings."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("CRONPILOT_")}
    env.update(
        HOME=str(home),
        PYTHONPATH=str(ROOT),
        CRONPILOT_DATABASE_URL=url,
        CRONPILOT_SECRET_KEY_FILE=str(home / "secret.key"),
        CRONPILOT_ALLOWED_NETWORKS="127.0.0.1/32",
        **extra,
    )
    return env


@asynccontextmanager
async def scheduler_running(cli: Cli, log: Path) -> AsyncIterator[asyncio.subprocess.Process]:
    """`cronpilot scheduler --with-planner` as a process, its output in `log`, stopped by
    SIGTERM on the way out (its exit status is then the process's `returncode`)."""
    with log.open("wb") as sink:
        scheduler = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "cronpilot.adapters.cli.entry",
            "scheduler",
            "--with-planner",
            cwd=cli.home,
            env=cli.env,
            stdout=sink,
            stderr=asyncio.subprocess.STDOUT,
        )
        try:
            yield scheduler
        finally:
            scheduler.send_signal(signal.SIGTERM)
            await asyncio.wait_for(scheduler.wait(), 60)


def log_errors(log: Path) -> tuple[int, list[str]]:
    """The tracebacks in a scheduler's log, and its ERROR and CRITICAL lines."""
    text = log.read_text(encoding="utf-8", errors="replace")
    errors = [line for line in text.splitlines() if " ERROR " in line or "CRITICAL" in line]
    return text.count("Traceback"), errors


async def trial(minutes: float, every: float, home: Path) -> None:
    database = home / "left-alone.db"
    url = f"sqlite+aiosqlite:///{database}"
    simulator = Simulator(seed=7)
    base = await simulator.start()
    cli = Cli(cli_env(home, url, SIMULATOR_URL=base), home)
    jobs = home / "jobs.yaml"
    jobs.write_text(left_alone_jobs(), encoding="utf-8")
    log = home / "scheduler.log"
    watch = PendingWatch()
    try:
        await cli("db", "upgrade")
        await cli("apply", "-f", str(jobs))
        started = time.monotonic()
        async with scheduler_running(cli, log) as scheduler:
            rejected = 0
            while (elapsed := time.monotonic() - started) < minutes * 60:
                rejected += await admin_looks(cli, watch, elapsed)
                await asyncio.sleep(max(0.0, every - (time.monotonic() - started - elapsed)))
        took = time.monotonic() - started
    finally:
        await simulator.stop()
    store = await open_sql_store(url)
    try:
        proposals = await store.planner.list_proposals(limit=1_000_000)
        sessions = await store.planner.list_sessions(limit=1_000_000)
        refs = {e.id: e.ref for e in await store.catalog.list_endpoints()}
    finally:
        await store.close()
    start = min((p.created_at for p in proposals), default=datetime.now())
    tracebacks, errors = log_errors(log)
    print(
        f"{took:.0f} s of `cronpilot scheduler --with-planner`, {len(refs)} endpoints, "
        f"an admin looking every {every:g} s ({rejected} rejections); times from the first proposal"
    )
    for line in figures(proposals, sessions, refs, watch, start).lines(start):
        print(line)
    print(f"scheduler exit status: {scheduler.returncode}")
    print(f"log: {tracebacks} tracebacks, {len(errors)} ERROR lines ({log})")
    for line in errors[:10]:
        print(f"  {line}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10, help="how long to leave it alone")
    parser.add_argument("--every", type=float, default=5, help="seconds between the admin's looks")
    parser.add_argument(
        "--keep", type=Path, default=None, help="a folder to keep the database and log in"
    )
    arguments = parser.parse_args(argv)
    print_header(
        f"python -m bench.left_alone --minutes {arguments.minutes:g} --every {arguments.every:g}"
    )
    if arguments.keep is not None:
        arguments.keep.mkdir(parents=True, exist_ok=True)
        asyncio.run(trial(arguments.minutes, arguments.every, arguments.keep))
        return
    with tempfile.TemporaryDirectory(prefix="cronpilot-left-alone-") as folder:
        asyncio.run(trial(arguments.minutes, arguments.every, Path(folder)))


if __name__ == "__main__":
    main()
