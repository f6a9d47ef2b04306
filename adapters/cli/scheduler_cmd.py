"""`cronpilot scheduler`: one scheduler worker process, until SIGINT or SIGTERM."""

from __future__ import annotations

import asyncio
import os
import signal
import tempfile
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Annotated, Any

import typer

from cronpilot.adapters.bootstrap import build_clock
from cronpilot.adapters.cli.runtime import cli_settings
from cronpilot.adapters.database_url import is_postgres
from cronpilot.adapters.processes import (
    open_probes,
    open_store_when_reachable,
    serve_planner,
    serve_scheduler,
    settle_worker_heap,
)
from cronpilot.adapters.settings import Settings
from cronpilot.domain.ports import Telemetry, WorkerLoop
from cronpilot.domain.runs.telemetry import NO_TELEMETRY

_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)

MetricsPortOption = Annotated[
    int | None,
    typer.Option(
        min=0,
        max=65535,
        help="Serve /metrics, /healthz and /readyz on this port, on CRONPILOT_METRICS_HOST "
        "(127.0.0.1 by default) (CRONPILOT_METRICS_PORT; default: off).",
    ),
]

ProcessesOption = Annotated[
    str,
    typer.Option(
        help="Worker processes, supervised, each its worker id suffixed -1..-N; 'auto' is one "
        "per core. PostgreSQL only above 1.",
    ),
]


def process_count(processes: str) -> int:
    """`--processes`: a number of at least 1, or `auto` for one per core."""
    if processes == "auto":
        return os.cpu_count() or 1
    if not processes.isdigit() or int(processes) < 1:
        raise typer.BadParameter("a number of at least 1, or auto", param_hint="--processes")
    return int(processes)


def scheduler(
    *,
    concurrency: Annotated[
        int | None, typer.Option(min=1, help="Calls in flight at once (CRONPILOT_CONCURRENCY).")
    ] = None,
    batch_size: Annotated[
        int | None,
        typer.Option(min=1, help="Endpoints claimed per round trip (CRONPILOT_BATCH_SIZE)."),
    ] = None,
    worker_id: Annotated[
        str | None,
        typer.Option(help="This worker's name in leases and runs (CRONPILOT_WORKER_ID)."),
    ] = None,
    with_planner: Annotated[
        bool, typer.Option("--with-planner", help="Run the planner in this process too.")
    ] = False,
    metrics_port: MetricsPortOption = None,
    processes: ProcessesOption = "1",
) -> None:
    """Claim due endpoints, call them and record their runs until SIGINT/SIGTERM.

    Run as many as you like against one PostgreSQL database. A database that cannot be reached
    yet is tried again until it can; one that can never work (a missing SQLite folder or file,
    a file that is not a database, another schema) exits 3. On a signal, calls in flight get
    CRONPILOT_GRACE_SECONDS to finish; the rest are recorded abandoned, and the exit is clean.
    With --with-planner a planner worker shares the process (for small installs).
    With --processes N, N worker processes run under one supervisor that restarts one that
    dies and serves the group's one --metrics-port.
    """
    count = process_count(processes)
    overrides: dict[str, Any] = {
        "concurrency": concurrency,
        "batch_size": batch_size,
        "worker_id": worker_id,
        "metrics_port": metrics_port,
    }
    settings = cli_settings().model_copy(
        update={name: value for name, value in overrides.items() if value is not None}
    )
    if count == 1:
        asyncio.run(serve(settings, scheduler=True, planner=with_planner))
        return
    if not is_postgres(settings.database_url):
        # SQLite has one writer: a second process only waits on the first one's lock.
        raise typer.BadParameter(
            "more than 1 needs PostgreSQL (SQLite has one writer)", param_hint="--processes"
        )
    if with_planner:
        raise typer.BadParameter(
            "run the planner apart (cronpilot planner) with more than 1 process",
            param_hint="--with-planner",
        )
    serve_processes(settings, overrides, count)


def serve_processes(settings: Settings, overrides: dict[str, Any], count: int) -> None:
    """The supervised group of `count` worker processes; exits with the group's status when
    it gives up."""
    from cronpilot.adapters.process_group import GroupFailed, child_argv, child_env, serve_group

    given = {
        f"CRONPILOT_{name.upper()}": str(value)
        for name, value in overrides.items()
        if value is not None and name in ("concurrency", "batch_size")
    }
    # The children's metrics files live as long as the group: made here, deleted on exit.
    with tempfile.TemporaryDirectory(prefix="cronpilot-metrics-") as folder:
        metrics_dir = None if settings.metrics_port is None else Path(folder)
        probes = None
        if settings.metrics_port is not None:
            probes = (settings.metrics_host, settings.metrics_port, Path(folder))
        env = child_env(given, metrics_dir)
        try:
            asyncio.run(serve_group(child_argv(), env, settings.worker_id, count, probes))
        except GroupFailed as failed:
            typer.echo(f"error: {failed}", err=True)
            raise typer.Exit(failed.code) from failed


async def serve(settings: Settings, *, scheduler: bool, planner: bool) -> None:
    """Run the chosen workers (a scheduler with its housekeeping, a planner) until a stop
    signal, then close everything."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    async with AsyncExitStack() as resources:
        for signum in _STOP_SIGNALS:
            loop.add_signal_handler(signum, stop.set)
            resources.callback(loop.remove_signal_handler, signum)
        clock = build_clock()
        # Probes first: a worker waiting for its database is alive, and says why it is not ready.
        wanted: dict[WorkerLoop, bool] = {"scheduler": scheduler, "planner": planner}
        loops = [name for name, runs in wanted.items() if runs]
        probes = await open_probes(settings, loops, clock, resources)
        telemetry: Telemetry = NO_TELEMETRY if probes is None else probes.telemetry
        store = await open_store_when_reachable(settings, stop)
        if store is None:
            return
        resources.push_async_callback(store.close)
        if probes is not None:
            probes.catalog = store.catalog
        settle_worker_heap()
        workers = [
            *([serve_scheduler(settings, store, clock, stop, telemetry)] if scheduler else []),
            *([serve_planner(settings, store, clock, stop, telemetry)] if planner else []),
        ]
        await asyncio.gather(*workers)
