"""DNS resolution that can only hand aiohttp addresses the guard allows.

Checking a name once and connecting later lets DNS answer differently in between (rebinding).
Filtering inside the resolver means the connector only ever sees, and connects to, addresses
that passed `AddressPolicy` in this very resolution.
"""

from __future__ import annotations

import logging
import socket

from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import ThreadedResolver

from cronpilot.adapters.http.guard import AddressPolicy
from cronpilot.domain.errors import UnsafeURL
from cronpilot.domain.log_extra import log_extra

logger = logging.getLogger(__name__)


class GuardedResolver(AbstractResolver):
    """Wraps a resolver (the system's by default) and drops every refused address.

    Raises `UnsafeURL` when nothing allowed remains, so the call fails as a refused address
    rather than as a connection error."""

    def __init__(self, policy: AddressPolicy, inner: AbstractResolver | None = None) -> None:
        self._policy = policy
        self._inner = inner if inner is not None else ThreadedResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        results = await self._inner.resolve(host, port, family)
        allowed = [result for result in results if self._policy.allows(result["host"])]
        if not allowed:
            addresses = ", ".join(sorted({result["host"] for result in results}))
            logger.warning(
                "refused every address of %s",
                host,
                extra=log_extra("resolve_refused", host=host, addresses=addresses),
            )
            raise UnsafeURL(host, f"{host} resolves only to refused addresses: {addresses}")
        return allowed

    async def close(self) -> None:
        await self._inner.close()
