"""The composition root: the one module that knows every adapter and wires them from settings.

Workers and CLI commands ask this module for ports (`Store`, `Dispatcher`, `Waker`, `Clock`)
and for a wired scheduler (`serve_scheduler`); nothing else chooses an implementation. Nothing
is built at import time, and what only some commands need (the HTTP client, the LLM client,
Alembic, the workers and their configs, the wakers, the use cases) is imported by the function
that builds it: a CLI read command imports the store and little else (`bench/cli_startup.py`,
`tests/e2e/test_cli_startup.py`).
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import socket
from collections.abc import AsyncIterator, Collection
from contextlib import AsyncExitStack, asynccontextmanager, suppress
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from cronpilot.adapters.clock import SystemClock
from cronpilot.adapters.crypto import FernetCipher, load_or_create_key
from cronpilot.adapters.sockets import listening_socket
from cronpilot.adapters.sql.store import open_sql_store
from cronpilot.domain.errors import DatabaseUnusable, InvalidConfig, StoreUnavailable
from cronpilot.domain.log_extra import log_extra
from cronpilot.domain.outage import described, store_retry_delay
from cronpilot.domain.telemetry import NO_TELEMETRY

if TYPE_CHECKING:
    from fastapi import FastAPI
    from mcp.server.mcpserver import MCPServer

    from cronpilot.adapters.api.context import Authenticate
    from cronpilot.adapters.probes import Probes
    from cronpilot.adapters.settings import Settings
    from cronpilot.adapters.sql.migrate import Upgrade
    from cronpilot.adapters.wake import ListeningWaker
    from cronpilot.domain.access import Principal
    from cronpilot.domain.guardrails import GuardrailLimits
    from cronpilot.domain.ports import (
        ChatModel,
        Clock,
        Dispatcher,
        Embedder,
        SecretCipher,
        Store,
        Telemetry,
        Tracer,
        Waker,
        WorkerLoop,
    )
    from cronpilot.domain.retention import Retention
    from cronpilot.domain.workers import WorkerInfo
    from cronpilot.planner.config import PlannerConfig
    from cronpilot.planner.worker import PlannerWorker
    from cronpilot.scheduler.config import WorkerConfig
    from cronpilot.scheduler.notifier import Notifier, NotifierConfig
    from cronpilot.usecases.approvals import ApprovalDesk
    from cronpilot.usecases.proposals import ProposalDesk

log = logging.getLogger(__name__)


def build_cipher(settings: Settings) -> SecretCipher:
    """The header-secret cipher: `secret_key` when given, else the key file (made if missing)."""
    if settings.secret_key is not None:
        key, where = settings.secret_key.get_secret_value(), "CRONPILOT_SECRET_KEY"
    else:
        where = f"secret key file {settings.secret_key_file}"
        try:
            key = load_or_create_key(settings.secret_key_file)
        except (OSError, UnicodeError) as exc:
            raise InvalidConfig(where, f"cannot read or create it: {exc}") from exc
    try:
        return FernetCipher(key)
    except (ValueError, UnicodeError) as exc:
        # Never echo the key: the reason names only what is wrong with it.
        raise InvalidConfig(where, "not a Fernet key (32 url-safe base64-encoded bytes)") from exc


async def open_store(settings: Settings) -> Store:
    """The SQL store for `database_url`, encrypting header secrets at rest."""
    # Enough connections for finishes to overlap without one per in-flight call: a finish holds
    # its connection for one short transaction, while a call may take seconds.
    pool_size = max(5, min(settings.concurrency // 4, 25))
    return await open_sql_store(settings.database_url, build_cipher(settings), pool_size)


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


def migrate(settings: Settings) -> Upgrade:
    """Bring the database to the newest schema (Alembic head). Call outside an event loop."""
    from cronpilot.adapters.sql.migrate import upgrade_database

    return asyncio.run(upgrade_database(settings.database_url))


def build_dispatcher(settings: Settings, max_connections: int | None = None) -> Dispatcher:
    """Guarded (and signed, with a signing secret) calls; `max_connections` defaults to the
    worker's concurrency."""
    from cronpilot.adapters.http.dispatcher import AiohttpDispatcher

    signing = settings.signing_secret
    return AiohttpDispatcher(
        allowed_networks=settings.allowed_networks,
        max_connections=max_connections or settings.concurrency,
        max_retry_after_seconds=settings.max_retry_after_seconds,
        signing_secret=signing.get_secret_value() if signing is not None else None,
    )


def _database_url(database_url: str) -> URL:
    try:
        return make_url(database_url)
    except ArgumentError as exc:
        raise InvalidConfig("CRONPILOT_DATABASE_URL", "not a database URL") from exc


def is_postgres(database_url: str) -> bool:
    return _database_url(database_url).get_backend_name() == "postgresql"


def sqlite_file(database_url: str) -> Path | None:
    """The file of a SQLite URL; None for an in-memory database (or another backend)."""
    url = _database_url(database_url)
    database = url.database or ""
    if url.get_backend_name() != "sqlite" or database in ("", ":memory:"):
        return None
    if url.query.get("uri") == "true":
        # `sqlite:///file:name?mode=memory&uri=true`: the driver reads the name as a URI.
        if url.query.get("mode") == "memory":
            return None
        database = database.removeprefix("file:")
    return Path(database)


def build_waker(settings: Settings) -> ListeningWaker:
    """LISTEN/NOTIFY on PostgreSQL (on `database_listen_url` when set: PgBouncer's transaction
    pooling cannot LISTEN); Unix sockets beside a SQLite file, which every process of its
    machine may open; an in-process event for in-memory SQLite, which no other sees."""
    from cronpilot.adapters.wake import InProcessWaker, PostgresWaker, SocketWaker, wake_folder

    if is_postgres(settings.database_url):
        return PostgresWaker(settings.database_listen_url or settings.database_url)
    database = sqlite_file(settings.database_url)
    if database is None:
        return InProcessWaker()
    return SocketWaker(wake_folder(database))


def build_clock() -> Clock:
    return SystemClock()


def build_tracer(settings: Settings) -> Tracer | None:
    """OpenTelemetry spans when CRONPILOT_OTEL asks for them, else None (no spans). opentelemetry
    is imported only then: it is an optional extra, and no worker pays for it unasked."""
    if not settings.otel:
        return None
    try:
        from cronpilot.adapters.otel_tracer import OtelTracer
    except ImportError as exc:
        raise InvalidConfig(
            "CRONPILOT_OTEL",
            f"OpenTelemetry cannot be imported ({exc}); pip install 'cronpilot[otel]'",
        ) from exc
    return OtelTracer()


def worker_config(settings: Settings) -> WorkerConfig:
    """The scheduler worker's config: the one place it is made, defaults in `settings` only."""
    from cronpilot.scheduler.config import WorkerConfig

    return WorkerConfig(
        worker_id=settings.worker_id,
        concurrency=settings.concurrency,
        batch_size=settings.batch_size,
        lease_seconds=settings.lease_seconds,
        grace_seconds=settings.grace_seconds,
        max_sleep_seconds=settings.max_sleep_seconds,
        claim_ahead_seconds=settings.claim_ahead_seconds,
        dag_sweep_seconds=settings.dag_sweep_seconds,
        cancel_poll_seconds=settings.cancel_poll_seconds,
    )


def this_worker(settings: Settings, clock: Clock) -> WorkerInfo:
    """This process as the workers registry shows it, starting now."""
    from importlib.metadata import version

    from cronpilot.domain.workers import WorkerInfo

    now = clock.now()
    return WorkerInfo(
        id=settings.worker_id,
        host=socket.gethostname(),
        pid=os.getpid(),
        version=version("cronpilot"),
        started_at=now,
        last_seen=now,
    )


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
        housekeeping.start()
        resources.push_async_callback(housekeeping.stop)
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
        watch.start()
        resources.push_async_callback(watch.stop)
        heartbeat = Heartbeat(
            store.workers, clock, this_worker(settings, clock), settings.heartbeat_seconds
        )
        heartbeat.start()
        resources.push_async_callback(heartbeat.stop)
        learner = RunLearner(
            store.unit_of_work,
            store.reading,
            clock,
            telemetry=telemetry,
            embedder=build_embedder(settings),
        )
        learner.start()
        resources.push_async_callback(learner.stop)
        notifier = open_notifier(settings, store, clock, resources, telemetry)
        notifier.start()
        resources.push_async_callback(notifier.stop)
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
        )
        await worker.run(stop)


def notifier_config(settings: Settings) -> NotifierConfig:
    """The alerts notifier's config: the one place it is made, defaults in `settings` only."""
    from cronpilot.scheduler.notifier import NotifierConfig

    return NotifierConfig(
        worker_id=settings.worker_id,
        concurrency=settings.notify_concurrency,
        lease_seconds=settings.notify_lease_seconds,
        poll_seconds=settings.notify_poll_seconds,
        timeout_seconds=settings.notify_timeout_seconds,
    )


def open_notifier(
    settings: Settings,
    store: Store,
    clock: Clock,
    resources: AsyncExitStack,
    telemetry: Telemetry = NO_TELEMETRY,
) -> Notifier:
    """The alerts notifier of a scheduler worker, with a dispatcher of its own: webhooks never
    take the connections of endpoint calls. The dispatcher is closed with `resources`; e-mail
    goes through SMTP under the same address guard."""
    from cronpilot.adapters.mail import SmtpMailer
    from cronpilot.scheduler.notifier import Notifier

    config = notifier_config(settings)
    dispatcher = build_dispatcher(settings, max_connections=config.concurrency)
    resources.push_async_callback(dispatcher.close)
    mailer = SmtpMailer(settings.allowed_networks)
    return Notifier(store, dispatcher, clock, config, telemetry=telemetry, mailer=mailer)


# --- the planner ------------------------------------------------------------------------------


def retention(settings: Settings) -> Retention:
    """How long each growing table keeps its rows (runs: `retention_runs`, per endpoint)."""
    from cronpilot.domain.retention import Retention

    return Retention(
        sessions=timedelta(days=settings.retention_sessions_days),
        rule_evaluations=timedelta(days=settings.retention_rule_evaluations_days),
        proposals=timedelta(days=settings.retention_proposals_days),
        notifications=timedelta(days=settings.retention_notifications_days),
        audit=timedelta(days=settings.retention_audit_days),
        approvals=timedelta(days=settings.retention_approvals_days),
    )


def guardrail_limits(settings: Settings) -> GuardrailLimits:
    from cronpilot.domain.guardrails import GuardrailLimits

    return GuardrailLimits(
        max_pause_seconds=settings.planner_max_pause_seconds,
        max_changes_per_hour=settings.planner_max_changes_per_hour,
        max_hint_ttl_seconds=settings.planner_max_hint_ttl_seconds,
        pending_ttl_seconds=settings.planner_proposal_ttl_seconds,
        rejection_cooldown_seconds=settings.planner_rejection_cooldown_seconds,
    )


def planner_config(settings: Settings) -> PlannerConfig:
    """The planner worker's config: the one place it is made, defaults in `settings` only."""
    from cronpilot.planner.config import PlannerConfig

    return PlannerConfig(
        worker_id=settings.worker_id,
        batch_size=settings.planner_batch_size,
        lease_seconds=settings.planner_lease_seconds,
        poll_seconds=settings.planner_poll_seconds,
        history_runs=settings.planner_history_runs,
        min_look_again_seconds=settings.planner_min_look_again_seconds,
        backoff_seconds=settings.planner_backoff_seconds,
        backoff_cap_seconds=settings.planner_backoff_cap_seconds,
        grace_seconds=settings.grace_seconds,
        limits=guardrail_limits(settings),
        rule_dwell_seconds=settings.rules_dwell_seconds,
        keep_quiet=settings.planner_keep_quiet_sessions,
        brief_tokens=settings.planner_brief_tokens,
    )


def build_chat_model(settings: Settings, clock: Clock) -> ChatModel:
    from cronpilot.adapters.llm.openai_client import OpenAIChat

    key = settings.llm_api_key
    return OpenAIChat(
        model=settings.llm_model,
        base_url=settings.llm_base_url,
        api_key=key.get_secret_value() if key is not None else None,
        timeout_seconds=settings.llm_timeout_seconds,
        attempts=settings.llm_attempts,
        sleep=clock.sleep,
        now=clock.now,
    )


def build_embedder(settings: Settings) -> Embedder:
    """The search's embedder (decision 0033): wordllama's bundled model by default."""
    from cronpilot.adapters.search.embedders import NoEmbedder, OpenAIEmbedder, WordLlamaEmbedder

    if settings.search_embedder == "none":
        return NoEmbedder()
    if settings.search_embedder == "openai":
        key = settings.llm_api_key
        return OpenAIEmbedder(
            settings.search_embeddings_base_url or settings.llm_base_url,
            settings.search_embeddings_model,
            key.get_secret_value() if key is not None else None,
            settings.search_embeddings_timeout_seconds,
        )
    return WordLlamaEmbedder()


def build_proposal_desk(
    settings: Settings, store: Store, waker: Waker | None, telemetry: Telemetry = NO_TELEMETRY
) -> ProposalDesk:
    from cronpilot.usecases.proposals import ProposalDesk

    return ProposalDesk(
        store.unit_of_work, store.reading, waker, guardrail_limits(settings), telemetry=telemetry
    )


def build_approval_desk(
    store: Store, waker: Waker | None, telemetry: Telemetry = NO_TELEMETRY
) -> ApprovalDesk:
    from cronpilot.usecases.approvals import ApprovalDesk

    return ApprovalDesk(store.unit_of_work, store.reading, waker, telemetry=telemetry)


async def open_planner(
    settings: Settings,
    store: Store,
    clock: Clock,
    resources: AsyncExitStack,
    telemetry: Telemetry = NO_TELEMETRY,
) -> PlannerWorker:
    """A planner worker on `store`: the LLM when one is configured, else the heuristic. What
    it opens (LLM client, waker) is closed with `resources`."""
    from cronpilot.planner.heuristic import HeuristicAnalyst
    from cronpilot.planner.session import Analyst, LlmAnalyst
    from cronpilot.planner.worker import PlannerWorker

    analyst: Analyst = HeuristicAnalyst()
    if settings.llm_configured:
        chat = build_chat_model(settings, clock)
        resources.push_async_callback(chat.close)
        analyst = LlmAnalyst(chat, settings.planner_max_steps, settings.planner_max_tokens)
    waker = build_waker(settings)
    resources.push_async_callback(waker.close)
    return PlannerWorker(
        store,
        analyst,
        clock,
        planner_config(settings),
        waker=waker,
        telemetry=telemetry,
        embedder=build_embedder(settings),
    )


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


# --- the HTTP API -----------------------------------------------------------------------------


def build_api(
    settings: Settings, store: Store, waker: Waker, clock: Clock, authenticate: Authenticate
) -> FastAPI:
    """The API app on `store`; `authenticate` says whom a bearer token's secret belongs to."""
    # Imported here: FastAPI costs every other command its import time.
    from cronpilot.adapters.api.app import build_api as api_app
    from cronpilot.adapters.api.context import ApiContext
    from cronpilot.adapters.health import ReadinessProbe
    from cronpilot.adapters.metrics import PrometheusTelemetry
    from cronpilot.adapters.probes import Probes

    telemetry = PrometheusTelemetry()
    # No worker loop runs in the API process: ready means the database answers, at head.
    readiness = ReadinessProbe(
        settings.database_url,
        loops=(),
        loop_turns=telemetry.loop_turns,
        max_loop_age=settings.ready_loop_seconds,
    )
    return api_app(
        ApiContext(
            store=store,
            waker=waker,
            clock=clock,
            authenticate=authenticate,
            allowed_networks=settings.allowed_networks,
            floor_seconds=settings.min_interval_seconds,
            desk=build_proposal_desk(settings, store, waker, telemetry),
            approvals=build_approval_desk(store, waker, telemetry),
            probes=Probes(telemetry, readiness, clock, catalog=store.catalog),
            embedder=build_embedder(settings),
            worker_stale_seconds=settings.worker_stale_seconds,
        )
    )


def token_authenticator(store: Store, clock: Clock) -> Authenticate:
    """Whom a bearer token's secret belongs to: a live token of `cronpilot tokens create`."""
    from cronpilot.usecases.access import authenticate

    async def known(secret: str) -> Principal | None:
        return await authenticate(store, secret, clock.now())

    return known


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


# --- the MCP server ---------------------------------------------------------------------------


async def build_mcp(
    settings: Settings, store: Store, waker: Waker, clock: Clock, secret: str | None
) -> MCPServer[Any]:
    """The MCP server on `store`, acting for the token whose secret is `secret` (None: read
    tools only). Raises `InvalidConfig` for a secret that opens no live token."""
    # Imported here: the SDK (starlette, its HTTP client) costs every other command.
    from cronpilot.adapters.mcp.caller import caller_of
    from cronpilot.adapters.mcp.context import McpContext
    from cronpilot.adapters.mcp.server import build_server

    caller = await caller_of(token_authenticator(store, clock), secret)
    context = McpContext(
        store=store,
        waker=waker,
        clock=clock,
        allowed_networks=settings.allowed_networks,
        floor_seconds=settings.min_interval_seconds,
        desk=build_proposal_desk(settings, store, waker),
        approvals=build_approval_desk(store, waker),
        embedder=build_embedder(settings),
    )
    return build_server(context, caller)


@asynccontextmanager
async def _mcp_server(settings: Settings, secret: str | None) -> AsyncIterator[MCPServer[Any]]:
    """`build_mcp` on a store and waker of its own, closed on leaving."""
    store = await open_store(settings)
    waker = build_waker(settings)
    try:
        yield await build_mcp(settings, store, waker, build_clock(), secret)
    finally:
        await waker.close()
        await store.close()


async def serve_mcp_stdio(settings: Settings, secret: str | None) -> None:
    """Serve MCP on stdin and stdout until the client closes them."""
    async with _mcp_server(settings, secret) as server:
        await server.run_stdio_async()


async def serve_mcp_http(settings: Settings, secret: str, host: str, port: int) -> None:
    """Serve MCP as streamable HTTP at `/mcp` until interrupted, HTTPS when `api_tls_cert`
    and `api_tls_key` are set; clients send `secret` as a bearer token."""
    import uvicorn

    from cronpilot.adapters.mcp.server import http_app

    with listening_socket(host, port, "--port") as listening:
        async with _mcp_server(settings, secret) as server:
            config = uvicorn.Config(
                http_app(server, secret, host),
                host=host,
                port=port,
                ssl_certfile=settings.api_tls_cert,
                ssl_keyfile=settings.api_tls_key,
                log_config=None,
            )
            await uvicorn.Server(config).serve(sockets=[listening])
