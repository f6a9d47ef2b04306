"""Where a server command listens (`serve`, `mcp --http`): its TLS files, and the refusal to
carry bearer tokens in clear text off loopback."""

from __future__ import annotations

import ipaddress
import ssl
from pathlib import Path
from typing import Annotated

import typer

from cronpilot.adapters.settings import Settings

TlsCert = Annotated[
    Path | None, typer.Option(help="PEM certificate chain (default CRONPILOT_API_TLS_CERT).")
]
TlsKey = Annotated[
    Path | None, typer.Option(help="PEM private key (default CRONPILOT_API_TLS_KEY).")
]
InsecureHttp = Annotated[
    bool,
    typer.Option(
        "--insecure-http",
        help="Serve plain HTTP on a non-loopback address (behind a TLS-terminating proxy).",
    ),
]


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def listening_settings(
    settings: Settings,
    host: str,
    *,
    tls_cert: Path | None,
    tls_key: Path | None,
    insecure_http: bool,
) -> Settings:
    """`settings` with the TLS files given as options. Refuses (`BadParameter`, exit 2) one
    file without the other, and a non-loopback `host` without TLS or `insecure_http`: bearer
    tokens must not cross a network in clear text by accident."""
    overrides = {
        key: value
        for key, value in (("api_tls_cert", tls_cert), ("api_tls_key", tls_key))
        if value is not None
    }
    settings = settings.model_copy(update=overrides)
    if (settings.api_tls_cert is None) != (settings.api_tls_key is None):
        raise typer.BadParameter("give both or neither", param_hint="--tls-cert/--tls-key")
    tls = settings.api_tls_cert is not None
    if not (tls or insecure_http or is_loopback(host)):
        raise typer.BadParameter(
            f"{host} is not a loopback address: give --tls-cert and --tls-key, or "
            "--insecure-http behind a proxy that terminates TLS",
            param_hint="--host",
        )
    if settings.api_tls_cert is not None and settings.api_tls_key is not None:
        _check_tls_files(settings.api_tls_cert, settings.api_tls_key)
    return settings


def _check_tls_files(cert: Path, key: Path) -> None:
    """Refuse (`BadParameter`, exit 2) TLS files the server could not load, before it starts:
    a file missing or unreadable, or a pair that is not a PEM certificate chain and its private
    key. The server would otherwise fail in its own start, with a traceback."""
    for hint, path in (("--tls-cert", cert), ("--tls-key", key)):
        try:
            path.read_bytes()
        except OSError as exc:
            raise typer.BadParameter(
                f"cannot read {path}: {exc.strerror or exc}", param_hint=hint
            ) from exc
    try:
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(cert, key)
    except ssl.SSLError as exc:
        # The reason only: never anything read from the key.
        why = f" ({exc.reason})" if exc.reason else ""
        raise typer.BadParameter(
            f"{cert} and {key} are not a PEM certificate chain and its private key{why}",
            param_hint="--tls-cert/--tls-key",
        ) from exc
