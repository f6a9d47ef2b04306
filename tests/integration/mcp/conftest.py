"""An MCP server's world: a migrated SQLite file holding a job whose endpoint ran once (its
output schema learnt) and a pending proposal, a token of each scope (`read-bot`, `write-bot`,
`admin-bot`, made by the tokens' use case), and clients of the SDK's own over stdio (the
`cronpilot mcp` process) and over streamable HTTP (the server on a free loopback port)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx2
import pytest
from cryptography.fernet import Fernet
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, TextContent

from cronpilot.adapters.bootstrap import build_clock, build_mcp, token_authenticator
from cronpilot.adapters.crypto import FernetCipher
from cronpilot.adapters.jobs_file import parse_declarations
from cronpilot.adapters.mcp.server import http_app
from cronpilot.adapters.sql import open_sql_store
from cronpilot.adapters.wake import InProcessWaker
from cronpilot.domain.access.access import Scope
from cronpilot.domain.model import PlannerMode, Response
from cronpilot.domain.planning.planning import ProposalDraft, ProposalKind
from cronpilot.domain.ports import Store
from cronpilot.usecases.declarations import apply_declarations
from cronpilot.usecases.proposals import ProposalDesk, Proposer
from cronpilot.usecases.schema_learning import rebuild_schema
from tests.contract.builders import run_once
from tests.e2e.conftest import ROOT
from tests.integration.api.conftest import Secrets, bearer, issue_tokens
from tests.support.loopback import served_asgi
from tests.support.settings import limits_for_tests, settings_for_tests

JOBS = """
jobs:
  - name: shop
    endpoints:
      - name: stock
        url: https://example.com/stock?api_key=s3cret-in-url
        interval: 60s
        headers:
          Authorization: Bearer s3cret-in-header
      - name: prices
        url: https://example.com/prices
        depends_on: [stock]
"""
BODY = {"sku": "A-1", "in_stock": 3}
HELD = Proposer("heuristic", PlannerMode.REVIEW, None)
SECRETS_IN_JOBS = ("s3cret-in-url", "s3cret-in-header")
READ_TOOLS = {
    "list_jobs",
    "show_job",
    "list_endpoints",
    "show_endpoint",
    "list_runs",
    "show_run",
    "list_proposals",
    "show_proposal",
    "list_sessions",
    "show_session",
    "show_schema",
    "show_graph",
    "list_approvals",
    "search_endpoints",
}
WRITE_TOOLS = {
    "pause_endpoint",
    "resume_endpoint",
    "pause_job",
    "resume_job",
    "cancel_run",
    "retry_run",
    "clear_dag",
    "run_now",
    "apply_document",
}
DECISIONS = {"approve_proposal", "reject_proposal", "approve_gate", "reject_gate"}


@dataclass(frozen=True)
class World:
    database_url: str
    key: str
    """The Fernet key of the header secrets, which the server must share."""
    home: Path
    secrets: Secrets
    run_id: str
    proposal_id: str

    @asynccontextmanager
    async def store(self) -> AsyncIterator[Store]:
        opened = await open_sql_store(self.database_url, FernetCipher(self.key))
        try:
            yield opened
        finally:
            await opened.close()


@pytest.fixture
async def world(sqlite_url: str, tmp_path: Path) -> World:
    now = datetime.now(UTC)
    key = Fernet.generate_key().decode("ascii")
    store = await open_sql_store(sqlite_url, FernetCipher(key))
    try:
        declared = parse_declarations(JOBS, "jobs.yaml", [], env={})
        await apply_declarations(
            store.unit_of_work, None, declared, "jobs.yaml", actor="cli:ann@web-1", now=now
        )
        run = await run_once(store, now, Response(status_code=200, body=BODY))
        stock = await store.catalog.get_endpoint("shop/stock")
        await rebuild_schema(store.unit_of_work, store.reading, stock, now)
        desk = ProposalDesk(store.unit_of_work, store.reading, None, limits_for_tests())
        quieter = ProposalDraft(ProposalKind.INTERVAL, "quiet lately", 120.0, ttl_seconds=600)
        proposal = await desk.propose(quieter, stock.id, HELD, now)
        secrets = await issue_tokens(store, build_clock())
    finally:
        await store.close()
    return World(sqlite_url, key, tmp_path, secrets, run.id, proposal.id)


def server_env(world: World, **extra: str) -> dict[str, str]:
    """`cronpilot mcp`'s environment: the working tree's code on the world's database."""
    return {
        "PYTHONPATH": str(ROOT),
        "HOME": str(world.home),
        "CRONPILOT_DATABASE_URL": world.database_url,
        "CRONPILOT_SECRET_KEY": world.key,
        **extra,
    }


@asynccontextmanager
async def over_stdio(world: World, scope: Scope | None) -> AsyncIterator[ClientSession]:
    """A session with `cronpilot mcp` started as a process, with `scope`'s token in
    CRONPILOT_MCP_TOKEN (None: no token)."""
    token = {} if scope is None else {"CRONPILOT_MCP_TOKEN": world.secrets[scope]}
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "cronpilot.adapters.cli.entry", "mcp"],
        env=server_env(world, **token),
        cwd=world.home,
    )
    with (world.home / "mcp-stderr.log").open("w") as errlog:
        async with (
            stdio_client(server, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


def http_server(world: World, scope: Scope) -> AbstractAsyncContextManager[str]:
    """The URL of an MCP server acting for `scope`'s token, served by uvicorn on a free
    loopback port until the block ends."""
    return http_server_for(world, world.secrets[scope])


@asynccontextmanager
async def http_server_for(world: World, secret: str) -> AsyncIterator[str]:
    """The URL of an MCP server acting for the token of `secret` (as `http_server`)."""
    async with world.store() as store:
        waker = InProcessWaker()
        settings = settings_for_tests(database_url=world.database_url)
        clock = build_clock()
        server = await build_mcp(settings, store, waker, clock, secret)
        gated = http_app(server, secret, "127.0.0.1", token_authenticator(store, clock))
        try:
            async with served_asgi(gated, "auto") as url:
                yield f"{url}/mcp"
        finally:
            await waker.close()


@asynccontextmanager
async def over_http(url: str, secret: str) -> AsyncIterator[ClientSession]:
    async with (
        httpx2.AsyncClient(headers=bearer(secret), timeout=30) as client,
        streamable_http_client(url, http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def tool_names(session: ClientSession) -> set[str]:
    return {tool.name for tool in (await session.list_tools()).tools}


async def call(session: ClientSession, name: str, **arguments: Any) -> Any:
    """A tool's structured result; the call must succeed."""
    result = await session.call_tool(name, arguments)
    assert isinstance(result, CallToolResult)
    assert not result.is_error, result.content
    return result.structured_content


async def tool_error(session: ClientSession, name: str, **arguments: Any) -> str:
    """The text of the tool error the call must come back with."""
    result = await session.call_tool(name, arguments)
    assert isinstance(result, CallToolResult)
    assert result.is_error, result.structured_content
    [content] = result.content
    assert isinstance(content, TextContent)
    return content.text
