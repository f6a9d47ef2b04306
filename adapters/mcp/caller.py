"""Whom an MCP server acts for: the API token it was started with, or nobody (read tools only,
for the local user, whose CLI reads need no token either)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from cronpilot.domain.access.access import EVERY_JOB, Principal, Reach, Scope
from cronpilot.domain.errors import CronpilotError, InvalidConfig

Authenticate = Callable[[str], Awaitable[Principal | None]]
"""A token's secret → its principal, or None (no such token, or revoked)."""

TOKEN_SOURCE = "--token (or CRONPILOT_MCP_TOKEN)"


class TokenNoLongerLive(CronpilotError):
    """The server's token was revoked while it ran."""

    def __init__(self, actor: str) -> None:
        super().__init__(f"{actor} was revoked: restart the MCP server with a live token")


@dataclass(frozen=True, slots=True)
class Caller:
    principal: Principal | None
    secret: str | None
    authenticate: Authenticate

    @property
    def scope(self) -> Scope:
        return Scope.READ if self.principal is None else self.principal.scope

    @property
    def reach(self) -> Reach:
        """What the tools' queries may show: the token's jobs (every job for nobody's)."""
        return EVERY_JOB if self.principal is None else self.principal.reach

    async def check(self) -> None:
        """Before each call: a token revoked meanwhile stops the server's tools at once, as it
        stops API requests. Raises `TokenNoLongerLive`."""
        if self.principal is None or self.secret is None:
            return
        if await self.authenticate(self.secret) != self.principal:
            raise TokenNoLongerLive(self.principal.actor)


async def caller_of(authenticate: Authenticate, secret: str | None) -> Caller:
    """The caller for `secret` (None: nobody). Raises `InvalidConfig` for a secret that opens
    no live token; the message never shows it."""
    if secret is None:
        return Caller(None, None, authenticate)
    principal = await authenticate(secret)
    if principal is None:
        raise InvalidConfig(
            TOKEN_SOURCE, "not a live API token (make one with `cronpilot tokens create`)"
        )
    return Caller(principal, secret, authenticate)
