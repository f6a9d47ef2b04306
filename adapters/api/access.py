"""Bearer tokens: each route names the scope it needs; the injected `authenticate` says who a
secret belongs to."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from cronpilot.adapters.api.context import ApiContext, context
from cronpilot.adapters.api.problems import Forbidden, Unauthorized
from cronpilot.domain.access import Principal, Scope

_bearer = HTTPBearer(auto_error=False, description="An API token: `cronpilot tokens create`.")


def require(scope: Scope) -> Callable[..., Awaitable[Principal]]:
    """A dependency giving the caller's principal, refusing (401/403) one without `scope`."""

    async def principal(
        request: Request,
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
        ctx: Annotated[ApiContext, Depends(context)],
    ) -> Principal:
        if credentials is None or credentials.scheme.lower() != "bearer":
            raise Unauthorized
        found = await ctx.authenticate(credentials.credentials)
        if found is None:
            raise Unauthorized
        if not found.may(scope):
            raise Forbidden(f"{found.actor} has scope {found.scope}; this needs {scope}")
        return found

    return principal


Reader = Annotated[Principal, Depends(require(Scope.READ))]
Writer = Annotated[Principal, Depends(require(Scope.WRITE))]
Admin = Annotated[Principal, Depends(require(Scope.ADMIN))]
