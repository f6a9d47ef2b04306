"""`cronpilot serve`: the HTTP API and the web console."""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer

from cronpilot.adapters.cli.listening import InsecureHttp, TlsCert, TlsKey, listening_settings
from cronpilot.adapters.cli.runtime import cli_settings
from cronpilot.adapters.processes import serve_api


def serve(
    host: Annotated[
        str | None, typer.Option(help="Address to listen on (default CRONPILOT_API_HOST).")
    ] = None,
    port: Annotated[
        int | None,
        typer.Option(min=1, max=65535, help="Port (default CRONPILOT_API_PORT)."),
    ] = None,
    tls_cert: TlsCert = None,
    tls_key: TlsKey = None,
    insecure_http: InsecureHttp = False,
) -> None:
    """Serve the HTTP API (OpenAPI at /openapi.json, docs at /docs) and the web console at
    /console/ (sign in with an API token). Refuses a non-loopback address without TLS files or
    --insecure-http: tokens must not cross a network in clear text by accident."""
    settings = cli_settings()
    listen_host = host or settings.api_host
    settings = listening_settings(
        settings, listen_host, tls_cert=tls_cert, tls_key=tls_key, insecure_http=insecure_http
    )
    asyncio.run(serve_api(settings, listen_host, port or settings.api_port))
