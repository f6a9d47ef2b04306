"""`cronpilot scheduler --with-planner` as a real process against the simulator: the built-in
planner adapts a schedule from what the endpoint answered, SIGTERM stops both workers, and an
LLM that never answers does not hold the stop up."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from cronpilot.adapters.jobs_file import parse_declarations
from cronpilot.adapters.sql import open_sql_store
from cronpilot.domain.model import PlannerMode
from cronpilot.domain.planning.planning import ProposalStatus, SessionStatus
from cronpilot.domain.ports import Store
from cronpilot.harness.simulator import Simulator
from cronpilot.planner.worker import CUT_SHORT
from cronpilot.usecases.declarations import apply_to_catalog
from tests.integration.scheduler.processes import exited
from tests.support.fake_openai_server import FakeOpenAI, Hang

JOBS = """
jobs:
  - name: queue
    planner_mode: auto
    budget: 900/h
    endpoints:
      - {name: depth, url: "${SIMULATOR_URL}/queue/depth", interval: 2s, min_interval: 1s,
         max_interval: 30s}
"""
DEADLINE = 60.0
GRACE_SECONDS = 1.0


async def _apply_jobs(store: Store, simulator_url: str) -> None:
    await apply_to_catalog(
        store.catalog,
        parse_declarations(JOBS, "test", ["127.0.0.1/32"], {"SIMULATOR_URL": simulator_url}),
        datetime.now(UTC),
    )


async def _start_worker(
    sqlite_url: str, tmp_path: Path, **settings: str
) -> asyncio.subprocess.Process:
    """`cronpilot scheduler --with-planner` on `sqlite_url`, logging to `worker.log`; the LLM
    only where `settings` name one."""
    env = {
        name: value for name, value in os.environ.items() if not name.startswith("CRONPILOT_LLM_")
    }
    env |= {
        "CRONPILOT_DATABASE_URL": sqlite_url,
        "CRONPILOT_SECRET_KEY_FILE": str(tmp_path / "secret.key"),
        "CRONPILOT_ALLOWED_NETWORKS": "127.0.0.1/32",
        "CRONPILOT_PLANNER_POLL_SECONDS": "0.5",
        # Real seconds: the planner looks again within the test, not a minute later.
        "CRONPILOT_PLANNER_MIN_LOOK_AGAIN_SECONDS": "0.5",
        "CRONPILOT_MAX_SLEEP_SECONDS": "0.5",
        "PYTHONFAULTHANDLER": "1",
        **{f"CRONPILOT_{name.upper()}": value for name, value in settings.items()},
    }
    with (tmp_path / "worker.log").open("wb") as output:
        return await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "cronpilot.adapters.cli.main",
            "scheduler",
            "--with-planner",
            cwd=tmp_path,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=output,
            stderr=output,
        )


async def test_the_planner_runs_beside_the_scheduler_and_stops_on_sigterm(
    sqlite_url: str, tmp_path: Path
) -> None:
    simulator = Simulator(seed=3)
    url = await simulator.start()
    store = await open_sql_store(sqlite_url)
    log = tmp_path / "worker.log"
    try:
        await _apply_jobs(store, url)
        process = await _start_worker(sqlite_url, tmp_path)
        try:
            async with asyncio.timeout(DEADLINE):
                # Another process writes the proposal: there is nothing to await but the table.
                while not await store.planner.list_proposals():  # noqa: ASYNC110
                    await asyncio.sleep(0.2)
            process.send_signal(signal.SIGTERM)
            assert await exited(process, log, DEADLINE) == 0, log.read_text()
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()

        [proposal, *_] = await store.planner.list_proposals()
        assert proposal.status is ProposalStatus.APPLIED
        assert proposal.proposed_by == "freshness"
        assert proposal.reason.endswith("of 900/h across the job's 1 endpoints)")
        [session, *_] = await store.planner.list_sessions()
        assert session.planner == "freshness"
        depth = await store.catalog.get_endpoint("queue/depth")
        assert depth.interval_hint is not None
        assert (await store.catalog.get_job("queue")).planner_mode is PlannerMode.AUTO
        assert "planner " in log.read_text()
    finally:
        await store.close()
        await simulator.stop()


async def test_sigterm_cuts_a_hanging_llm_short_within_the_grace_period(
    sqlite_url: str, tmp_path: Path
) -> None:
    """Without the cut, the stop waited for the LLM's timeout (60 s) times its attempts (4)."""
    simulator = Simulator(seed=3)
    url = await simulator.start()
    store = await open_sql_store(sqlite_url)
    log = tmp_path / "worker.log"
    try:
        await _apply_jobs(store, url)
        async with FakeOpenAI(lambda _: Hang()) as llm:
            process = await _start_worker(
                sqlite_url, tmp_path, llm_base_url=llm.base_url, grace_seconds=str(GRACE_SECONDS)
            )
            try:
                async with asyncio.timeout(DEADLINE):
                    await llm.until_requests(1)
                process.send_signal(signal.SIGTERM)
                signalled = time.monotonic()
                assert await exited(process, log, GRACE_SECONDS + 5) == 0, log.read_text()
                assert time.monotonic() - signalled < GRACE_SECONDS + 3
            finally:
                if process.returncode is None:
                    process.kill()
                    await process.wait()

        [session] = await store.planner.list_sessions()
        assert (session.status, session.error) == (SessionStatus.FAILED, CUT_SHORT)
        assert session.planner == "llm:gpt-4o-mini"
        output = log.read_text()
        assert CUT_SHORT in output
        assert "Traceback" not in output
    finally:
        await store.close()
        await simulator.stop()
