"""`cronpilot scheduler`: one scheduler worker process, until SIGINT or SIGTERM."""

from __future__ import annotations

import asyncio
import signal
from contextlib import AsyncExitStack
from typing import Annotated, Any

import typer

from adapters.bootstrap import build_clock, open_store, serve_scheduler, settle_worker_heap
from adapters.cli.runtime import cli_settings
from adapters.settings import Settings

_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


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
) -> None:
    """Claim due endpoints, call them and record their runs until SIGINT/SIGTERM.

    Run as many as you like against one PostgreSQL database. On a signal, calls in flight get
    CRONPILOT_GRACE_SECONDS to finish; the rest are recorded abandoned, and the exit is clean.
    """
    overrides: dict[str, Any] = {
        "concurrency": concurrency,
        "batch_size": batch_size,
        "worker_id": worker_id,
    }
    settings = cli_settings().model_copy(
        update={name: value for name, value in overrides.items() if value is not None}
    )
    asyncio.run(serve(settings))


async def serve(settings: Settings) -> None:
    """Run one worker and its housekeeping until a stop signal, then close everything."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    async with AsyncExitStack() as resources:
        for signum in _STOP_SIGNALS:
            loop.add_signal_handler(signum, stop.set)
            resources.callback(loop.remove_signal_handler, signum)
        store = await open_store(settings)
        resources.push_async_callback(store.close)
        settle_worker_heap()
        await serve_scheduler(settings, store, build_clock(), stop)
