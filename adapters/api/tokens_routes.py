"""API tokens, for admins: list, create, rotate and revoke; a secret is in the answer to the
request that made it, and nowhere else."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import AwareDatetime, Field

from cronpilot.adapters.api.access import EveryJobAdmin
from cronpilot.adapters.views.tokens import token_view
from cronpilot.adapters.web.context import Context
from cronpilot.adapters.web.strict import StrictBody
from cronpilot.domain.access.access import Scope
from cronpilot.domain.access.tokens import DEFAULT_GRACE, MAX_GRACE
from cronpilot.usecases.access import create_token, list_tokens, revoke_token, rotate_token

router = APIRouter(tags=["tokens"])


@router.get("/tokens")
async def get_tokens(
    ctx: Context,
    _: EveryJobAdmin,
    include_revoked: Annotated[bool, Query(alias="all", description="Revoked tokens too.")] = False,
) -> list[dict[str, Any]]:
    """Tokens by name: scope, jobs, expiry, last use. Never a secret."""
    tokens = await list_tokens(ctx.store.reading, include_revoked=include_revoked)
    return [token_view(t) for t in tokens]


class TokenRequest(StrictBody):
    name: str = Field(description="Unique among live tokens: `ci`, `grafana`.")
    scope: Scope
    expires_at: AwareDatetime | None = Field(
        default=None, description="When it stops working (in the future); null: never."
    )
    jobs: list[str] | None = Field(
        default=None, description="The only jobs it reaches; null: every job."
    )


@router.post("/tokens", status_code=201)
async def post_token(request: TokenRequest, ctx: Context, who: EveryJobAdmin) -> dict[str, Any]:
    """Create a token; `secret` is in this answer only."""
    token, secret = await create_token(
        ctx.store.unit_of_work,
        request.name,
        request.scope,
        who.actor,
        ctx.clock.now(),
        expires_at=request.expires_at,
        jobs=request.jobs,
    )
    return token_view(token) | {"secret": secret}


class RotateRequest(StrictBody):
    grace_seconds: int = Field(
        default=int(DEFAULT_GRACE.total_seconds()),
        ge=0,
        le=int(MAX_GRACE.total_seconds()),
        description="How long the replaced secret still works.",
    )


@router.post("/tokens/{token}/rotate")
async def rotate(
    token: str, ctx: Context, who: EveryJobAdmin, request: RotateRequest | None = None
) -> dict[str, Any]:
    """A new secret for the token (by name or id), in this answer only; the old one works for
    `grace_seconds` more."""
    grace = timedelta(seconds=(request or RotateRequest()).grace_seconds)
    kept, secret = await rotate_token(
        ctx.store.unit_of_work, token, who.actor, ctx.clock.now(), grace
    )
    return token_view(kept) | {"secret": secret}


@router.delete("/tokens/{token}")
async def delete_token(token: str, ctx: Context, who: EveryJobAdmin) -> dict[str, Any]:
    """Revoke the token (by name or id): its secrets are refused from now on."""
    return token_view(await revoke_token(ctx.store.unit_of_work, token, who.actor, ctx.clock.now()))
