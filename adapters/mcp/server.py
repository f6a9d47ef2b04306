"""The MCP server of one caller: the read tools and resources for everyone, the write tools
for a `write` token, the decisions for an `admin` one; and its streamable HTTP app, which
only the holder of that token may call."""

from __future__ import annotations

import hmac
import logging
from importlib.metadata import version
from typing import Any

from mcp.server.mcpserver import MCPServer
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from cronpilot.adapters.mcp.caller import Authenticate, Caller
from cronpilot.adapters.mcp.context import McpContext
from cronpilot.adapters.mcp.decision_tools import add_decision_tools
from cronpilot.adapters.mcp.read_tools import add_read_tools
from cronpilot.adapters.mcp.resources import add_resources
from cronpilot.adapters.mcp.toolbox import Toolbox
from cronpilot.adapters.mcp.write_tools import add_write_tools
from cronpilot.domain.access.access import Scope as TokenScope
from cronpilot.domain.errors import TokenExpired
from cronpilot.domain.log_extra import log_extra

log = logging.getLogger(__name__)

INSTRUCTIONS = (
    "cronpilot calls HTTP endpoints on schedules and adapts the schedules from what they "
    "answer. An endpoint is named `job/endpoint`. Read before you write: list_endpoints and "
    "show_endpoint give the schedule in force and why, list_runs and show_run what the calls "
    "answered, list_proposals what the planner wants to change."
)


def build_server(ctx: McpContext, caller: Caller) -> MCPServer[Any]:
    """The tools `caller`'s scope allows and no more: a client never sees a tool it may not
    call."""
    box = Toolbox(caller)
    add_read_tools(box, ctx, caller.reach)
    add_resources(box, ctx, caller.reach)
    if caller.principal is not None and caller.principal.may(TokenScope.WRITE):
        add_write_tools(box, ctx, caller.principal)
    if caller.principal is not None and caller.principal.may(TokenScope.ADMIN):
        add_decision_tools(box, ctx, caller.principal)
    server: MCPServer[Any] = box.server(
        "cronpilot", instructions=INSTRUCTIONS, version=version("cronpilot")
    )
    log.info(
        "MCP server for %s: %s tools",
        "the local user (no token)" if caller.principal is None else caller.principal.actor,
        caller.scope.value,
        extra=log_extra("mcp_start"),
    )
    return server


def http_app(server: MCPServer[Any], secret: str, host: str, authenticate: Authenticate) -> ASGIApp:
    """Streamable HTTP at `/mcp`, answering only requests that carry `secret` as a bearer
    token while that token is live (401 otherwise: a wrong bearer, or the token revoked or
    expired since the server started): the server acts for that token, so whoever reaches the
    port must hold it. On a loopback `host` the SDK also refuses foreign Host and Origin
    headers (DNS rebinding)."""
    return BearerGate(server.streamable_http_app(host=host), secret, authenticate)


WRONG_BEARER = "send this server's token as Authorization: Bearer <token>"


class BearerGate:
    def __init__(self, app: ASGIApp, secret: str, authenticate: Authenticate) -> None:
        self._app = app
        self._secret = secret
        self._authenticate = authenticate

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refusal = await self._refusal(Headers(scope=scope))
            if refusal is not None:
                refused = JSONResponse(
                    {"error": refusal}, status_code=401, headers={"WWW-Authenticate": "Bearer"}
                )
                await refused(scope, receive, send)
                return
        await self._app(scope, receive, send)

    async def _refusal(self, headers: Headers) -> str | None:
        """Why the request is refused, or None: the bearer first (no lookup for a wrong one),
        then the token as it is now, one indexed read."""
        if not self._opens(headers):
            return WRONG_BEARER
        try:
            live = await self._authenticate(self._secret) is not None
        except TokenExpired as expired:
            return str(expired)
        return None if live else "this server's token was revoked: restart it with a live token"

    def _opens(self, headers: Headers) -> bool:
        scheme, _, given = headers.get("authorization", "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(
            given.strip().encode(), self._secret.encode()
        )
