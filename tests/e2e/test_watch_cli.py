"""Missed and late runs end to end (issue 25): days simulated on a hand-driven clock over the
database the CLI applied to, with the workers' own watch, then `notifications list` shows one
alert per episode however many workers noticed it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cronpilot.adapters.crypto import FernetCipher
from cronpilot.adapters.manual_clock import ManualClock
from cronpilot.adapters.sql import open_sql_store
from cronpilot.domain.model import Response
from cronpilot.domain.ports import Store
from cronpilot.domain.runs.workers import WorkerInfo
from cronpilot.scheduler.watch import Watch
from tests.e2e.conftest import Cli
from tests.support.finishing import finish_one

HOOK = "http://127.0.0.1:9/hooks?token=hunter2"
JOBS = f"""\
jobs:
  - name: etl
    notify: {{urls: ["{HOOK}"], missed_after: 10m, late_after: 30s}}
    endpoints:
      - name: fetch
        url: http://127.0.0.1:9/fetch
        interval: 1m
"""
STALE = 60.0
OK = Response(status_code=200)


@pytest.fixture
def cli(cli_for: Callable[..., Cli], sqlite_url: str) -> Cli:
    return cli_for(sqlite_url, CRONPILOT_ALLOWED_NETWORKS="127.0.0.1/32", COLUMNS="200")


class _Worker:
    """What a scheduler worker does that matters here: its watch, its heartbeat, its runs."""

    def __init__(self, name: str, store: Store, clock: ManualClock) -> None:
        self.me = WorkerInfo(name, "host", 1, "0", clock.now(), clock.now())
        self.store = store
        self.clock = clock
        self.watch = Watch(store, clock, 10, worker_stale_seconds=STALE)

    async def start(self) -> None:
        await self.watch.first_look()
        await self.beat()

    async def beat(self) -> None:
        await self.store.workers.beat(self.me.seen(self.clock.now()))

    async def run_due(self) -> None:
        """Claim what is due now and record it at once."""
        now = self.clock.now()
        for claim in await self.store.claims.claim_due(now, self.me.id, 60, 10):
            await finish_one(self.store.claims, claim, self.me.id, OK, now)


async def _days_with_a_gap(database_url: str, key: str, start: datetime) -> None:
    store = await open_sql_store(database_url, FernetCipher(key))
    clock = ManualClock(start)
    try:
        alone = _Worker("alone", store, clock)
        await alone.start()
        for _ in range(5):  # five minutes of runs on time
            await alone.run_due()
            await alone.watch.check_once()
            await alone.beat()
            clock.advance(60)
        # The worker is gone for two days; two start again at once.
        clock.advance(2 * 86400 - 5 * 60)
        back = [_Worker(name, store, clock) for name in ("b1", "b2")]
        await asyncio.gather(*(worker.start() for worker in back))
        await back[0].run_due()
        await asyncio.gather(*(worker.watch.check_once() for worker in back))
        # A run that starts 45 s after its slot, then one in time.
        clock.advance(60 + 45)
        await back[1].run_due()
        clock.advance(15)
        await back[0].run_due()
        await asyncio.gather(*(worker.watch.check_once() for worker in back))
    finally:
        await store.close()


def test_a_worker_gone_for_days_raises_each_episode_once_with_its_recovery(
    cli: Cli, tmp_path: Path, sqlite_url: str
) -> None:
    jobs_file = tmp_path / "jobs.yaml"
    jobs_file.write_text(JOBS, encoding="utf-8")
    cli("apply", "-f", str(jobs_file))
    key = cli.secret_key()
    applied = cli.json("endpoints", "show", "etl/fetch")
    start = datetime.fromisoformat(applied["next_run_at"]).astimezone(UTC)

    asyncio.run(_days_with_a_gap(sqlite_url, key, start))

    listed = cli.json("notifications", "list", "--job", "etl")
    told = [(n["event"], (n["payload"].get("episode") or {}).get("kind")) for n in listed]
    assert sorted(told) == sorted(
        [
            ("no_workers", "no_workers"),
            ("recovered", "no_workers"),
            ("missed", "missed"),
            ("recovered", "missed"),
            ("late", "late"),
            ("recovered", "late"),
        ]
    )
    [missed] = [n for n in listed if n["event"] == "missed"]
    episode = missed["payload"]["episode"]
    assert episode["started_at"] == (start + timedelta(minutes=5)).isoformat()
    assert {n["url"] for n in listed} == {"http://127.0.0.1:9/hooks?token=****"}
    table = cli("notifications", "list", "--job", "etl").stdout
    for label in ("no_workers", "missed", "late", "recovered (missed)", "recovered (late)"):
        assert label in table
    assert "hunter2" not in table + str(listed)
    shown = cli("endpoints", "show", "etl/fetch").stdout
    assert "missed after 600s; late after 30s" in shown
