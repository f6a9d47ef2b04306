"""Listening sockets for the servers a command starts (the API, MCP over HTTP, a worker's
probes), bound before the server takes them over."""

from __future__ import annotations

import socket

from cronpilot.domain.errors import InvalidConfig


def listening_socket(host: str, port: int, option: str) -> socket.socket:
    """A socket listening on `host:port`. Raises `InvalidConfig` naming `option` when it
    cannot be had (the port in use, an address not of this machine): bound here, that is one
    line, where a server binding it itself logs a traceback, or exits on its own."""
    # As uvicorn picks it: a name such as `localhost` is served on IPv4.
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family)
    except OSError as exc:
        raise InvalidConfig(
            option, f"cannot listen on {host}:{port}: {exc.strerror or exc}"
        ) from exc
