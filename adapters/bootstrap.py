"""The composition root: the one module that knows every adapter and wires them from settings.

Workers and CLI commands ask this module for ports (`Store`, `Dispatcher`, `Waker`, `Clock`),
wired workers (`open_planner`) and apps (`build_api`, `build_mcp`); nothing else chooses an
implementation. The processes that run them (`serve_scheduler`, `serve_api`, …) are in
`adapters.processes`, the configs made from settings in `adapters.configs`, what a database URL
names in `adapters.database_url`. Nothing is built at import time, and what only some commands
need (the HTTP client, the LLM client, Alembic, the workers and their configs, the wakers, the
use cases) is imported by the function that builds it: a CLI read command imports the store and
little else (`bench/cli_startup.py`, `tests/e2e/test_cli_startup.py`).
"""

from __future__ import annotations

import asyncio
import os
import socket
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any

from cronpilot.adapters.clock import SystemClock
from cronpilot.adapters.configs import (
    guardrail_limits,
    notifier_config,
    planner_config,
    retention,
    worker_config,
)
from cronpilot.adapters.crypto import KeyFileCipher, fernet_cipher
from cronpilot.adapters.database_url import is_postgres, sqlite_file
from cronpilot.adapters.sql.store import open_sql_store
from cronpilot.domain.errors import InvalidConfig
from cronpilot.domain.runs.telemetry import NO_TELEMETRY

if TYPE_CHECKING:
    from fastapi import FastAPI
    from mcp.server.mcpserver import MCPServer

    from cronpilot.adapters.settings import Settings
    from cronpilot.adapters.sql.migrate import Upgrade
    from cronpilot.adapters.wake import ListeningWaker
    from cronpilot.adapters.web.context import Authenticate
    from cronpilot.domain.access.access import Principal
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
    )
    from cronpilot.domain.runs.workers import WorkerInfo
    from cronpilot.planner.worker import PlannerWorker
    from cronpilot.scheduler.notifier import Notifier
    from cronpilot.usecases.approvals import ApprovalDesk
    from cronpilot.usecases.proposals import ProposalDesk

__all__ = [
    "build_api",
    "build_approval_desk",
    "build_chat_model",
    "build_cipher",
    "build_clock",
    "build_dispatcher",
    "build_embedder",
    "build_mcp",
    "build_proposal_desk",
    "build_tracer",
    "build_waker",
    "guardrail_limits",
    "is_postgres",
    "migrate",
    "notifier_config",
    "open_notifier",
    "open_planner",
    "open_store",
    "planner_config",
    "retention",
    "sqlite_file",
    "this_worker",
    "token_authenticator",
    "worker_config",
]


def build_cipher(settings: Settings) -> SecretCipher:
    """The secrets' cipher: `secret_key` when given, else the key file, made only when a
    secret is first sealed (`KeyFileCipher`)."""
    if settings.secret_key is not None:
        return fernet_cipher(settings.secret_key.get_secret_value(), "CRONPILOT_SECRET_KEY")
    return KeyFileCipher(settings.secret_key_file)


async def open_store(settings: Settings) -> Store:
    """The SQL store for `database_url`, encrypting header secrets at rest."""
    # Enough connections for finishes to overlap without one per in-flight call: a finish holds
    # its connection for one short transaction, while a call may take seconds.
    pool_size = max(5, min(settings.concurrency // 4, 25))
    return await open_sql_store(settings.database_url, build_cipher(settings), pool_size)


def migrate(settings: Settings) -> Upgrade:
    """Bring the database to the newest schema (Alembic head), its stored secrets sealed with
    the configured key. Call outside an event loop."""
    from cronpilot.adapters.sql.migrate import upgrade_database

    return asyncio.run(upgrade_database(settings.database_url, build_cipher(settings)))


def build_dispatcher(settings: Settings, max_connections: int | None = None) -> Dispatcher:
    """Guarded (and signed, with a signing secret) calls; `max_connections` defaults to the
    worker's concurrency."""
    from cronpilot.adapters.http.dispatcher import AiohttpDispatcher
    from cronpilot.adapters.http.signing import Signer, SigningKeys

    signing, previous = settings.signing_secret, settings.signing_secret_previous
    signer = (
        None
        if signing is None
        else Signer(
            SigningKeys(
                current=signing.get_secret_value(),
                previous=None if previous is None else previous.get_secret_value(),
                previous_until=settings.signing_previous_until,
                legacy_headers=settings.signing_legacy_headers,
            )
        )
    )
    return AiohttpDispatcher(
        allowed_networks=settings.allowed_networks,
        max_connections=max_connections or settings.concurrency,
        max_retry_after_seconds=settings.max_retry_after_seconds,
        signer=signer,
        conditional_budget_bytes=int(settings.conditional_memory_mb * 1024**2),
    )


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


def this_worker(settings: Settings, clock: Clock) -> WorkerInfo:
    """This process as the workers registry shows it, starting now."""
    from importlib.metadata import version

    from cronpilot.domain.runs.workers import WorkerInfo

    now = clock.now()
    return WorkerInfo(
        id=settings.worker_id,
        host=socket.gethostname(),
        pid=os.getpid(),
        version=version("cronpilot"),
        started_at=now,
        last_seen=now,
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
    """A planner worker on `store`: the LLM when one is configured, else the built-in
    freshness planner (decision 0058). What it opens (LLM client, waker) is closed with
    `resources`."""
    from cronpilot.planner.freshness import FreshnessAnalyst
    from cronpilot.planner.session import Analyst, LlmAnalyst
    from cronpilot.planner.worker import PlannerWorker

    analyst: Analyst = FreshnessAnalyst()
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
        desk=build_proposal_desk(settings, store, waker, telemetry),
        telemetry=telemetry,
        embedder=build_embedder(settings),
    )


def build_api(
    settings: Settings, store: Store, waker: Waker, clock: Clock, authenticate: Authenticate
) -> FastAPI:
    """The API app on `store`; `authenticate` says whom a bearer token's secret belongs to."""
    # Imported here: FastAPI costs every other command its import time.
    from cronpilot.adapters.health import ReadinessProbe
    from cronpilot.adapters.metrics import PrometheusTelemetry
    from cronpilot.adapters.probes import Probes
    from cronpilot.adapters.web.app import build_api as api_app
    from cronpilot.adapters.web.context import ApiContext

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
