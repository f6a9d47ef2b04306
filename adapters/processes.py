"""The processes' lifecycles: each runs what the composition root (`adapters.bootstrap`) wires
until it is told to stop, and closes what it opened: a scheduler worker, a planner worker, the
HTTP API, the MCP server.
"""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import AsyncIterator, Collection
from contextlib import AsyncExitStack, asynccontextmanager, suppress
from typing import TYPE_CHECKING, Any

from cronpilot.adapters.bootstrap import (
    build_api,
    build_approval_desk,
    build_clock,
    build_dispatcher,
    build_embedder,
    build_mcp,
    build_tracer,
    build_waker,
    open_notifier,
    open_planner,
    open_store,
    this_worker,
    token_authenticator,
)
from cronpilot.adapters.configs import retention, worker_config
from cronpilot.adapters.sockets import listening_socket
from cronpilot.domain.errors import DatabaseUnusable, StoreUnavailable
from cronpilot.domain.log_extra import log_extra
from cronpilot.domain.runs.outage import described, store_retry_delay
from cronpilot.domain.runs.telemetry import NO_TELEMETRY

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from cronpilot.adapters.probes import Probes
    from cronpilot.adapters.settings import Settings
    from cronpilot.adapters.web.context import Authenticate
    from cronpilot.domain.ports import Clock, Dispatcher, Store, Telemetry, WorkerLoop

log = logging.getLogger(__name__)


async def open_store_when_reachable(settings: Settings, stop: asyncio.Event) -> Store | None:
    """`open_store` for a worker, tried again while the database cannot be reached (a worker
    started before its database, or while it restarts): from a fifth of a second, doubling up
    to `max_sleep_seconds`, with one warning for the outage (a debug line per further try).
    None if `stop` is set first. Raises `DatabaseUnusable` for a database no wait mends (a
    missing SQLite folder or file, a file that is not a database, another schema)."""
    from cronpilot.adapters.sql.migrate import require_head

    failures = 0
    while not stop.is_set():
        try:
            await require_head(settings.database_url)
            store = await open_store(settings)
        except DatabaseUnusable:
            raise
        except StoreUnavailable as error:
            failures += 1
            delay = store_retry_delay(failures, settings.max_sleep_seconds)
            log.log(
                logging.WARNING if failures == 1 else logging.DEBUG,
                "store unavailable at start (%s); retrying in %.1f s",
                described(error),
                delay,
                extra=log_extra("store_unavailable", failures=failures),
            )
            with suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), delay)
        else:
            if failures:
                log.info(
                    "store reachable after %d tries",
                    failures + 1,
                    extra=log_extra("store_available", failures=failures),
                )
            return store
    return None


def settle_worker_heap() -> None:
    """Call once a worker process is wired, before it starts calling: moves every object built
    so far (modules, SQLAlchemy's tables and compiled statements, settings) into the garbage
    collector's permanent generation. They live as long as the process, yet each full
    collection would walk them all again; with hundreds of calls in flight full collections come
    about every second, and each stalled the event loop for 75-220 ms (measured in
    `bench.lateness` with `gc.callbacks`; 5-100 ms once frozen)."""
    gc.freeze()


async def open_probes(
    settings: Settings,
    loops: Collection[WorkerLoop],
    clock: Clock,
    resources: AsyncExitStack,
) -> Probes | None:
    """The probe server of a worker process running `loops`, with the telemetry its workers
    report to, when `metrics_port` is set (else None); closed with `resources`. Its `catalog`
    is for the caller to set once the store is open."""
    if settings.metrics_port is None:
        return None
    from cronpilot.adapters.health import ReadinessProbe
    from cronpilot.adapters.metrics import PrometheusTelemetry
    from cronpilot.adapters.probes import Probes, start_probes

    telemetry = PrometheusTelemetry()
    readiness = ReadinessProbe(
        settings.database_url,
        loops=loops,
        loop_turns=telemetry.loop_turns,
        max_loop_age=settings.ready_loop_seconds,
    )
    probes = Probes(telemetry, readiness, clock)
    runner = await start_probes(probes, settings.metrics_host, settings.metrics_port)
    resources.push_async_callback(runner.cleanup)
    return probes


async def serve_scheduler(
    settings: Settings,
    store: Store,
    clock: Clock,
    stop: asyncio.Event,
    telemetry: Telemetry = NO_TELEMETRY,
    *,
    dispatcher: Dispatcher | None = None,
) -> None:
    """Run one scheduler worker on `store`, with its dispatcher, waker and housekeeping, until
    `stop` is set and the worker has wound down; everything opened here is closed on return.

    `store` stays the caller's: `cronpilot scheduler` opens one for this alone, the demo shares
    its own with the live table. So does a given `dispatcher` (the soak benchmark's counts its
    calls in flight to know when the workers are idle on its fake clock)."""
    tracer = build_tracer(settings)
    from cronpilot.scheduler.heartbeat import Heartbeat
    from cronpilot.scheduler.housekeeping import Housekeeping
    from cronpilot.scheduler.learning import RunLearner
    from cronpilot.scheduler.watch import Watch
    from cronpilot.scheduler.worker import SchedulerWorker

    async with AsyncExitStack() as resources:
        if dispatcher is None:
            dispatcher = build_dispatcher(settings)
            resources.push_async_callback(dispatcher.close)
        waker = build_waker(settings)
        resources.push_async_callback(waker.close)
        # Listen before the first claim: a wake-up sent from now on is not missed.
        try:
            await waker.listen()
        except StoreUnavailable as error:
            # The waker connects again when the worker next waits; meanwhile wake-ups are
            # missed and the worker wakes after `max_sleep` at the latest.
            log.warning(
                "not listening for wake-ups yet (%s)",
                described(error),
                extra=log_extra("listen_failed"),
            )
        housekeeping = Housekeeping(
            store,
            clock,
            settings.reaper_interval_seconds,
            settings.retention_runs,
            settings.prune_interval_seconds,
            worker_stale_seconds=settings.worker_stale_seconds,
            retention=retention(settings),
            approvals=build_approval_desk(store, waker, telemetry),
            telemetry=telemetry,
        )
        # Missed slots are looked for as often as dead workers' runs are reaped; the first look
        # (a gap in the heartbeats, slots missed meanwhile) comes before this worker's first
        # heartbeat and claim (`scheduler.watch`).
        watch = Watch(
            store,
            clock,
            settings.reaper_interval_seconds,
            worker_stale_seconds=settings.worker_stale_seconds,
        )
        await watch.first_look()
        heartbeat = Heartbeat(
            store.workers, clock, this_worker(settings, clock), settings.heartbeat_seconds
        )
        learner = RunLearner(
            store.unit_of_work,
            store.reading,
            clock,
            telemetry=telemetry,
            embedder=build_embedder(settings),
        )
        notifier = open_notifier(settings, store, clock, resources, telemetry)
        log.info(
            "scheduler %s started: concurrency %d, batch %d, lease %g s, grace %g s",
            settings.worker_id,
            settings.concurrency,
            settings.batch_size,
            settings.lease_seconds,
            settings.grace_seconds,
            extra=log_extra("start", worker_id=settings.worker_id),
        )
        worker = SchedulerWorker(
            store,
            dispatcher,
            clock,
            waker,
            worker_config(settings),
            observer=learner,
            tracer=tracer,
            telemetry=telemetry,
            # Under the worker's task group, stopped once its slots have drained.
            side=(housekeeping, watch, heartbeat, learner, notifier),
        )
        await worker.run(stop)


async def serve_planner(
    settings: Settings,
    store: Store,
    clock: Clock,
    stop: asyncio.Event,
    telemetry: Telemetry = NO_TELEMETRY,
) -> None:
    """Run one planner worker on `store` until `stop` is set; `store` stays the caller's."""
    async with AsyncExitStack() as resources:
        worker = await open_planner(settings, store, clock, resources, telemetry)
        await worker.run(stop)


async def serve_api(settings: Settings, host: str, port: int) -> None:
    """Serve the API until interrupted (uvicorn handles SIGINT/SIGTERM), HTTPS when
    `api_tls_cert` and `api_tls_key` are set; the store and waker are closed on return."""
    import uvicorn

    with listening_socket(host, port, "--port") as listening:
        store = await open_store(settings)
        waker = build_waker(settings)
        try:
            clock = build_clock()
            app = build_api(settings, store, waker, clock, token_authenticator(store, clock))
            config = uvicorn.Config(
                app,
                host=host,
                port=port,
                ssl_certfile=settings.api_tls_cert,
                ssl_keyfile=settings.api_tls_key,
                log_config=None,
                proxy_headers=True,
            )
            await uvicorn.Server(config).serve(sockets=[listening])
        finally:
            await waker.close()
            await store.close()


@asynccontextmanager
async def _mcp_server(
    settings: Settings, secret: str | None
) -> AsyncIterator[tuple[MCPServer[Any], Authenticate]]:
    """`build_mcp` on a store and waker of its own, closed on leaving, with the check of a
    token's secret on that store."""
    store = await open_store(settings)
    waker = build_waker(settings)
    clock = build_clock()
    try:
        server = await build_mcp(settings, store, waker, clock, secret)
        yield server, token_authenticator(store, clock)
    finally:
        await waker.close()
        await store.close()


async def serve_mcp_stdio(settings: Settings, secret: str | None) -> None:
    """Serve MCP on stdin and stdout until the client closes them."""
    async with _mcp_server(settings, secret) as (server, _):
        await server.run_stdio_async()


async def serve_mcp_http(settings: Settings, secret: str, host: str, port: int) -> None:
    """Serve MCP as streamable HTTP at `/mcp` until interrupted, HTTPS when `api_tls_cert`
    and `api_tls_key` are set; clients send `secret` as a bearer token."""
    import uvicorn

    from cronpilot.adapters.mcp.server import http_app

    with listening_socket(host, port, "--port") as listening:
        async with _mcp_server(settings, secret) as (server, authenticate):
            config = uvicorn.Config(
                http_app(server, secret, host, authenticate),
                host=host,
                port=port,
                ssl_certfile=settings.api_tls_cert,
                ssl_keyfile=settings.api_tls_key,
                log_config=None,
            )
            await uvicorn.Server(config).serve(sockets=[listening])
