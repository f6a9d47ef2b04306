"""`cronpilot scheduler`: one scheduler worker process, until SIGINT or SIGTERM."""

from __future__ import annotations

import asyncio
import signal
from contextlib import AsyncExitStack
from typing import Annotated, Any

import typer

from cronpilot.adapters.bootstrap import build_clock
from cronpilot.adapters.cli.runtime import cli_settings
from cronpilot.adapters.processes import (
    open_probes,
    open_store_when_reachable,
    serve_planner,
    serve_scheduler,
    settle_worker_heap,
)
from cronpilot.adapters.settings import Settings
from cronpilot.domain.ports import Telemetry, WorkerLoop
from cronpilot.domain.telemetry import NO_TELEMETRY

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


def scheduler(
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
) -> None:
    """Claim due endpoints, call them and record their runs until SIGINT/SIGTERM.

    Run as many as you like against one PostgreSQL database. A database that cannot be reached
    yet is tried again until it can; one that can never work (a missing SQLite folder or file,
    a file that is not a database, another schema) exits 3. On a signal, calls in flight get
    CRONPILOT_GRACE_SECONDS to finish; the rest are recorded abandoned, and the exit is clean.
    With --with-planner a planner worker shares the process (for small installs).
    """
    overrides: dict[str, Any] = {
        "concurrency": concurrency,
        "batch_size": batch_size,
        "worker_id": worker_id,
        "metrics_port": metrics_port,
    }
    settings = cli_settings().model_copy(
        update={name: value for name, value in overrides.items() if value is not None}
    )
    asyncio.run(serve(settings, scheduler=True, planner=with_planner))


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
