"""`cronpilot serve`: the HTTP API and the web console."""

from __future__ import annotations

import asyncio
import ipaddress
from pathlib import Path
from typing import Annotated

import typer

from cronpilot.adapters.bootstrap import serve_api
from cronpilot.adapters.cli.runtime import cli_settings


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve(
    host: Annotated[
        str | None, typer.Option(help="Address to listen on (default CRONPILOT_API_HOST).")
    ] = None,
    port: Annotated[
        int | None,
        typer.Option(min=1, max=65535, help="Port (default CRONPILOT_API_PORT)."),
    ] = None,
    tls_cert: Annotated[
        Path | None, typer.Option(help="PEM certificate chain (default CRONPILOT_API_TLS_CERT).")
    ] = None,
    tls_key: Annotated[
        Path | None, typer.Option(help="PEM private key (default CRONPILOT_API_TLS_KEY).")
    ] = None,
    insecure_http: Annotated[
        bool,
        typer.Option(
            "--insecure-http",
            help="Serve plain HTTP on a non-loopback address (behind a TLS-terminating proxy).",
        ),
    ] = False,
) -> None:
    """Serve the HTTP API (OpenAPI at /openapi.json, docs at /docs) and the web console at
    /console/ (sign in with an API token). Refuses a non-loopback address without TLS files or
    --insecure-http: tokens must not cross a network in clear text by accident."""
    settings = cli_settings()
    overrides = {
        key: value
        for key, value in (("api_tls_cert", tls_cert), ("api_tls_key", tls_key))
        if value is not None
    }
    settings = settings.model_copy(update=overrides)
    listen_host = host or settings.api_host
    if (settings.api_tls_cert is None) != (settings.api_tls_key is None):
        raise typer.BadParameter("give both or neither", param_hint="--tls-cert/--tls-key")
    tls = settings.api_tls_cert is not None
    if not (tls or insecure_http or is_loopback(listen_host)):
        raise typer.BadParameter(
            f"{listen_host} is not a loopback address: give --tls-cert and --tls-key, or "
            "--insecure-http behind a proxy that terminates TLS",
            param_hint="--host",
        )
    asyncio.run(serve_api(settings, listen_host, port or settings.api_port))
