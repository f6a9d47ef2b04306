"""`cronpilot scheduler --with-planner` as a real process against the simulator: the heuristic
planner adapts a schedule from what the endpoint answered, and SIGTERM stops both workers."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from datetime import UTC, datetime
from pathlib import Path

from adapters.config import parse_declarations
from adapters.simulator import Simulator
from adapters.sql import open_sql_store
from domain.model import PlannerMode
from domain.planning import ProposalStatus

JOBS = """
jobs:
  - name: queue
    planner_mode: auto
    endpoints:
      - {name: depth, url: "${SIMULATOR_URL}/queue/depth", interval: 2s, min_interval: 1s,
         max_interval: 30s}
"""
DEADLINE = 60.0


async def test_the_planner_runs_beside_the_scheduler_and_stops_on_sigterm(
    sqlite_url: str, tmp_path: Path
) -> None:
    simulator = Simulator(seed=3)
    url = await simulator.start()
    store = await open_sql_store(sqlite_url)
    log = tmp_path / "worker.log"
    try:
        await store.catalog.apply(
            parse_declarations(JOBS, "test", ["127.0.0.1/32"], {"SIMULATOR_URL": url}),
            datetime.now(UTC),
        )
        env = {
            **os.environ,
            "CRONPILOT_DATABASE_URL": sqlite_url,
            "CRONPILOT_SECRET_KEY_FILE": str(tmp_path / "secret.key"),
            "CRONPILOT_ALLOWED_NETWORKS": "127.0.0.1/32",
            "CRONPILOT_PLANNER_POLL_SECONDS": "0.5",
            "CRONPILOT_MAX_SLEEP_SECONDS": "0.5",
        }
        for name in [n for n in env if n.startswith("CRONPILOT_LLM_")]:
            del env[name]
        with log.open("wb") as output:
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "adapters.cli.main",
                "scheduler",
                "--with-planner",
                cwd=tmp_path,
                env=env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=output,
                stderr=output,
            )
        try:
            async with asyncio.timeout(DEADLINE):
                # Another process writes the proposal: there is nothing to await but the table.
                while not await store.planner.list_proposals():  # noqa: ASYNC110
                    await asyncio.sleep(0.2)
            process.send_signal(signal.SIGTERM)
            async with asyncio.timeout(DEADLINE):
                assert await process.wait() == 0, log.read_text()
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()

        [proposal, *_] = await store.planner.list_proposals()
        assert proposal.status is ProposalStatus.APPLIED
        assert proposal.proposed_by == "heuristic"
        assert "tightening from every 2s to every 1s" in proposal.reason
        [session, *_] = await store.planner.list_sessions()
        assert session.planner == "heuristic"
        depth = await store.catalog.get_endpoint("queue/depth")
        assert depth.interval_hint is not None
        assert (await store.catalog.get_job("queue")).planner_mode is PlannerMode.AUTO
        assert "planner " in log.read_text()
    finally:
        await store.close()
        await simulator.stop()
