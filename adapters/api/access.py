"""Bearer tokens: each route names the scope it needs; the injected `authenticate` says who a
secret belongs to. What a job-limited token may see is its principal's `reach`, which each
route hands to its queries (decision 0049); a route over every job at once asks for a token
of every job."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated

from fastapi import Depends
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from cronpilot.adapters.web.context import ApiContext, context
from cronpilot.adapters.web.problems import Forbidden, Unauthorized
from cronpilot.domain.access.access import Principal, Scope
from cronpilot.domain.errors import TokenExpired

_bearer = HTTPBearer(auto_error=False, description="An API token: `cronpilot tokens create`.")


def require(scope: Scope, *, every_job: bool = False) -> Callable[..., Awaitable[Principal]]:
    """A dependency giving the caller's principal, refusing (401/403) one without `scope`
    and, with `every_job`, a job-limited one."""

    async def principal(
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
        if every_job:
            found.check_every_job()
        return found

    return principal


Reader = Annotated[Principal, Depends(require(Scope.READ))]
Writer = Annotated[Principal, Depends(require(Scope.WRITE))]
Admin = Annotated[Principal, Depends(require(Scope.ADMIN))]
EveryJobWriter = Annotated[Principal, Depends(require(Scope.WRITE, every_job=True))]
"""Applying a document, which may declare any job."""
EveryJobAdmin = Annotated[Principal, Depends(require(Scope.ADMIN, every_job=True))]
"""The audit log and the tokens, which span every job."""
