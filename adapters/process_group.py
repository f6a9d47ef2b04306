"""`cronpilot scheduler --processes N`: N scheduler worker processes under one supervisor.

Each child is `cronpilot scheduler` itself, with its own worker id (the group's, suffixed
`-1`..`-N`) and, when the group serves probes, a probe server of its own on a port the system
picks, writing its metrics to `PROMETHEUS_MULTIPROC_DIR`; the parent serves the one
`/metrics` (prometheus_client's multiprocess collector over that folder), `/healthz` and
`/readyz` for the group. A child that dies is started again after a backoff; one that keeps
dying within `START_SECONDS` of its start ends the group, as does a database no wait mends
(exit 3). SIGTERM or SIGINT stops every child (each gets its grace) and the parent exits 0.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys
import time
from collections.abc import Mapping
from contextlib import AsyncExitStack, suppress
from dataclasses import dataclass, field
from pathlib import Path

from aiohttp import web

from cronpilot.adapters.sockets import listening_socket
from cronpilot.domain.log_extra import log_extra

log = logging.getLogger(__name__)

START_SECONDS = 10.0
"""A child that exits sooner after its start crashed at start."""
CRASHES_AT_START = 5
"""Crashes at start in a row after which the group gives up."""
FIRST_BACKOFF_SECONDS = 0.5
MAX_BACKOFF_SECONDS = 30.0
EXIT_UNUSABLE = 3
"""A child's exit for a database no wait mends (`DatabaseUnusable`): restarting cannot help."""
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_JSON = "application/json"


class GroupFailed(Exception):
    """The group gave up: `code` is the exit status for the parent."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


@dataclass(slots=True)
class Child:
    """One supervised worker process: its number and what it is now."""

    number: int
    worker_id: str
    process: asyncio.subprocess.Process | None = None
    started: float = 0.0
    restarts: int = 0
    crashes_at_start: int = 0

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.returncode is None


@dataclass(slots=True)
class ProcessGroup:
    """`count` children running `argv` with `env`, each given `CRONPILOT_WORKER_ID`."""

    argv: list[str]
    env: Mapping[str, str]
    worker_id: str
    count: int
    children: list[Child] = field(default_factory=list)
    first_backoff: float = FIRST_BACKOFF_SECONDS
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    failure: GroupFailed | None = None

    async def run(self) -> None:
        """Run and supervise the children until a stop signal, then stop them; raises
        `GroupFailed` when a child cannot be kept running."""
        loop = asyncio.get_running_loop()
        for signum in _STOP_SIGNALS:
            loop.add_signal_handler(signum, self.stop.set)
        try:
            self.children = [
                Child(number, f"{self.worker_id}-{number}") for number in range(1, self.count + 1)
            ]
            log.info(
                "scheduler group %s: %d worker processes",
                self.worker_id,
                self.count,
                extra=log_extra("start", worker_id=self.worker_id, processes=self.count),
            )
            await asyncio.gather(*(self._supervise(child) for child in self.children))
        finally:
            for signum in _STOP_SIGNALS:
                loop.remove_signal_handler(signum)
        if self.failure is not None:
            raise self.failure

    async def _supervise(self, child: Child) -> None:
        backoff = self.first_backoff
        while not self.stop.is_set():
            code = await self._run_once(child)
            if self.stop.is_set():
                return
            lived = time.monotonic() - child.started
            if code == EXIT_UNUSABLE:
                self._give_up(f"worker {child.worker_id}: the database cannot be used", code)
                return
            child.crashes_at_start = child.crashes_at_start + 1 if lived < START_SECONDS else 0
            if child.crashes_at_start >= CRASHES_AT_START:
                self._give_up(
                    f"worker {child.worker_id} exited within {START_SECONDS:g} s of its start "
                    f"{CRASHES_AT_START} times in a row (last exit {code}); see its log above",
                    1,
                )
                return
            if lived >= START_SECONDS:
                backoff = self.first_backoff
            child.restarts += 1
            log.warning(
                "worker %s exited with %d after %.1f s; starting it again in %.1f s",
                child.worker_id,
                code,
                lived,
                backoff,
                extra=log_extra("worker_process_died", worker_id=child.worker_id, exit_code=code),
            )
            with suppress(TimeoutError):
                await asyncio.wait_for(self.stop.wait(), backoff)
            backoff = min(backoff * 2, MAX_BACKOFF_SECONDS)

    async def _run_once(self, child: Child) -> int:
        env = {**self.env, "CRONPILOT_WORKER_ID": child.worker_id}
        process = await asyncio.create_subprocess_exec(*self.argv, env=env)
        child.process, child.started = process, time.monotonic()
        waiting = asyncio.ensure_future(process.wait())
        stopping = asyncio.ensure_future(self.stop.wait())
        await asyncio.wait((waiting, stopping), return_when=asyncio.FIRST_COMPLETED)
        if not waiting.done():
            with suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
        stopping.cancel()
        code = await waiting
        _forget_metrics_of(process.pid, self.env)
        return code

    def _give_up(self, message: str, code: int) -> None:
        if self.failure is None:
            self.failure = GroupFailed(message, code)
        self.stop.set()

    def readiness(self) -> tuple[bool, dict[str, object]]:
        """Ready when every child is running; the document names each."""
        workers = [
            {
                "worker_id": child.worker_id,
                "running": child.running,
                "pid": child.process.pid if child.process is not None else None,
                "restarts": child.restarts,
            }
            for child in self.children
        ]
        ready = bool(workers) and all(child.running for child in self.children)
        return ready, {"ready": ready, "workers": workers}


def _forget_metrics_of(pid: int, env: Mapping[str, str]) -> None:
    """Drop a dead child's live gauges from the group's metrics (its counters stay)."""
    if "PROMETHEUS_MULTIPROC_DIR" in env:
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid, env["PROMETHEUS_MULTIPROC_DIR"])  # type: ignore[no-untyped-call]


def group_probes_app(group: ProcessGroup, metrics_dir: Path) -> web.Application:
    """`/metrics` summed over the children, `/healthz`, and `/readyz` from the group's state."""
    from prometheus_client import CollectorRegistry, multiprocess
    from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

    async def metrics(_request: web.Request) -> web.Response:
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry, str(metrics_dir))  # type: ignore[no-untyped-call]
        return web.Response(
            body=generate_latest(registry), headers={"Content-Type": CONTENT_TYPE_LATEST}
        )

    async def healthz(_request: web.Request) -> web.Response:
        return web.Response(body=b'{"alive":true}', headers={"Content-Type": _JSON})

    async def readyz(_request: web.Request) -> web.Response:
        ready, document = group.readiness()
        return web.Response(
            status=200 if ready else 503,
            body=json.dumps(document).encode(),
            headers={"Content-Type": _JSON},
        )

    app = web.Application()
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    return app


async def serve_group(
    argv: list[str],
    env: Mapping[str, str],
    worker_id: str,
    count: int,
    probes: tuple[str, int, Path] | None,
) -> None:
    """Run the group, with its probe server on `probes` (host, port, metrics folder) if
    given, until a stop signal; raises `GroupFailed` when it gives up."""
    group = ProcessGroup(argv, env, worker_id, count)
    async with AsyncExitStack() as resources:
        if probes is not None:
            host, port, metrics_dir = probes
            listening = listening_socket(host, port, "--metrics-port")
            runner = web.AppRunner(group_probes_app(group, metrics_dir), access_log=None)
            await runner.setup()
            resources.push_async_callback(runner.cleanup)
            await web.SockSite(runner, listening).start()
            log.info(
                "group probes on http://%s:%d (/metrics, /healthz, /readyz)",
                host,
                runner.addresses[0][1],
                extra=log_extra("probes_start", port=runner.addresses[0][1]),
            )
        await group.run()


def child_argv() -> list[str]:
    """The command of one worker process: this `cronpilot scheduler`, one process."""
    return [sys.executable, "-m", "cronpilot.adapters.cli.entry", "scheduler", "--processes", "1"]


def child_env(overrides: Mapping[str, str], metrics_dir: Path | None) -> dict[str, str]:
    """The children's environment: this one, the command line's options as `CRONPILOT_*`,
    and, with probes, a port of their own and the shared metrics folder."""
    env = {**os.environ, **overrides}
    if metrics_dir is not None:
        env["PROMETHEUS_MULTIPROC_DIR"] = str(metrics_dir)
        env["CRONPILOT_METRICS_PORT"] = "0"
    return env
