"""`cronpilot mcp`: cronpilot as an MCP server for AI agents (decision 0027)."""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer

from cronpilot.adapters.cli.listening import InsecureHttp, TlsCert, TlsKey, listening_settings
from cronpilot.adapters.cli.runtime import cli_settings
from cronpilot.adapters.processes import serve_mcp_http, serve_mcp_stdio

DEFAULT_PORT = 8765


def mcp(
    *,
    token: Annotated[
        str | None,
        typer.Option(
            help="An API token's secret (default CRONPILOT_MCP_TOKEN, which keeps it out of "
            "the process list): `write` adds pause, resume, run now and apply; `admin` adds "
            "the decisions. Without one, read tools only (stdio)."
        ),
    ] = None,
    http: Annotated[
        bool,
        typer.Option(
            "--http",
            help="Serve streamable HTTP at /mcp instead of stdio; needs a token, which "
            "clients send as Authorization: Bearer.",
        ),
    ] = False,
    host: Annotated[str, typer.Option(help="With --http: the address to listen on.")] = (
        "127.0.0.1"
    ),
    port: Annotated[
        int, typer.Option(min=1, max=65535, help="With --http: the port.")
    ] = DEFAULT_PORT,
    tls_cert: TlsCert = None,
    tls_key: TlsKey = None,
    insecure_http: InsecureHttp = False,
) -> None:
    """Serve cronpilot to AI agents over MCP (stdio, or streamable HTTP with --http): tools
    that read jobs, endpoints, runs, proposals, sessions, schemas, the graph and approvals,
    and, with a write or admin token, tools that change them, recorded for the token."""
    settings = cli_settings()
    secret = token
    if secret is None and settings.mcp_token is not None:
        secret = settings.mcp_token.get_secret_value()
    if not http:
        asyncio.run(serve_mcp_stdio(settings, secret))
        return
    if secret is None:
        raise typer.BadParameter(
            "over HTTP the server acts for a token that its clients must send: give --token "
            "or CRONPILOT_MCP_TOKEN",
            param_hint="--token",
        )
    settings = listening_settings(
        settings, host, tls_cert=tls_cert, tls_key=tls_key, insecure_http=insecure_http
    )
    asyncio.run(serve_mcp_http(settings, secret, host, port))
