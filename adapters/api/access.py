"""Bearer tokens: each route names the scope it needs; the injected `authenticate` says who a
secret belongs to, and a job-limited token is confined to its jobs by what the request names."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from cronpilot.adapters.api.context import ApiContext, context
from cronpilot.adapters.api.problems import Forbidden, Unauthorized
from cronpilot.adapters.reach import reach_of
from cronpilot.domain.access import Principal, Scope
from cronpilot.domain.errors import TokenExpired
from cronpilot.usecases.access import confine

_bearer = HTTPBearer(auto_error=False, description="An API token: `cronpilot tokens create`.")


def require(scope: Scope) -> Callable[..., Awaitable[Principal]]:
    """A dependency giving the caller's principal, refusing (401/403) one without `scope` or,
    for a job-limited token, one asking for a job it does not hold."""

    async def principal(
        request: Request,
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
        ctx: Annotated[ApiContext, Depends(context)],
    ) -> Principal:
        if credentials is None or credentials.scheme.lower() != "bearer":
            raise Unauthorized
        try:
            found = await ctx.authenticate(credentials.credentials)
        except TokenExpired as error:
            raise Unauthorized(str(error)) from error
        if found is None:
            raise Unauthorized
        if not found.may(scope):
            raise Forbidden(f"{found.actor} has scope {found.scope}; this needs {scope}")
        params = [*request.path_params.items(), *request.query_params.multi_items()]
        await confine(ctx.store.reading, found, reach_of(params))
        return found

    return principal


Reader = Annotated[Principal, Depends(require(Scope.READ))]
Writer = Annotated[Principal, Depends(require(Scope.WRITE))]
Admin = Annotated[Principal, Depends(require(Scope.ADMIN))]
