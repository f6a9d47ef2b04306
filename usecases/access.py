"""API tokens and the audit log: creating and revoking tokens (each audited in its own unit of
work), authenticating a request's secret, and reading the log."""

from __future__ import annotations

import logging
from datetime import datetime

from cronpilot.domain.access import Principal, Scope, token_actor
from cronpilot.domain.audit import AuditAction, AuditCursor, AuditEntry, audit_entry
from cronpilot.domain.errors import InvalidTokenName, StoreUnavailable, TokenNotFound
from cronpilot.domain.log_extra import log_extra
from cronpilot.domain.model import new_id
from cronpilot.domain.ports import ReadingFactory, Repositories, UnitOfWorkFactory
from cronpilot.domain.time_range import TimeRange
from cronpilot.domain.tokens import (
    NAME_RULE,
    NAME_SHAPE,
    ApiToken,
    hash_secret,
    new_secret,
    opens,
    use_to_record,
    well_formed,
)

log = logging.getLogger(__name__)


async def create_token(
    uow: UnitOfWorkFactory, name: str, scope: Scope, actor: str, now: datetime
) -> tuple[ApiToken, str]:
    """A new token and its secret, which is not stored and cannot be shown again. Raises
    `InvalidTokenName` for a malformed name or one a live token holds."""
    if NAME_SHAPE.fullmatch(name) is None:
        raise InvalidTokenName(name, f"is not {NAME_RULE}")
    secret = new_secret()
    token = ApiToken(new_id(), name, scope, hash_secret(secret), now, actor)
    async with uow() as tx:
        try:
            await tx.access.get_live_token(name)
        except TokenNotFound:
            pass
        else:
            raise InvalidTokenName(name, "is taken by a live token; revoke it or choose another")
        await tx.access.add_token(token)
        await tx.access.record(
            audit_entry(actor, "token_create", name, f"scope {scope.value}", now)
        )
        await tx.commit()
    log.info(
        "token %s (%s) created by %s",
        name,
        scope.value,
        actor,
        extra=log_extra("token_create", token_id=token.id),
    )
    return token, secret


async def revoke_token(
    uow: UnitOfWorkFactory, name_or_id: str, actor: str, now: datetime
) -> ApiToken:
    """Revoke the live token of that name (or id): requests with its secret fail from now on.
    Raises `TokenNotFound`."""
    async with uow() as tx:
        token = await tx.access.get_live_token(name_or_id)
        revoked = await tx.access.revoke_token(token.id, actor, now)
        await tx.access.record(
            audit_entry(actor, "token_revoke", token.name, f"scope {token.scope.value}", now)
        )
        await tx.commit()
    log.info(
        "token %s revoked by %s",
        token.name,
        actor,
        extra=log_extra("token_revoke", token_id=token.id),
    )
    return revoked


async def list_tokens(reading: ReadingFactory, *, include_revoked: bool = False) -> list[ApiToken]:
    async with reading() as tx:
        return await tx.access.list_tokens(include_revoked=include_revoked)


async def authenticate(store: Repositories, secret: str, now: datetime) -> Principal | None:
    """The principal whose token `secret` is (actor `token:NAME`, the token's scope), or None
    for a malformed, unknown or revoked secret.

    The token's `last_used_at` is written at most once per `USE_RECORD_INTERVAL` per token,
    outside any unit of work (`store` is the store itself, not a reading unit): most requests
    read one row and write nothing."""
    if not well_formed(secret):
        return None
    token = await store.access.find_token(hash_secret(secret))
    if token is None or not opens(token, secret):
        return None
    if use_to_record(token, now):
        try:
            await store.access.mark_used(token.id, now)
        except StoreUnavailable as error:
            # A busy database (SQLite's writer lock held by a worker) must not fail a request
            # its token is valid for: the last use is a hint for admins, written next time.
            log.warning(
                "last use of token %s not recorded (%s)",
                token.name,
                type(error).__name__,
                extra=log_extra("token_use_unrecorded"),
            )
    return Principal(token_actor(token.name), token.scope)


async def list_audit(
    reading: ReadingFactory,
    *,
    actor: str | None = None,
    action: AuditAction | None = None,
    limit: int = 100,
    before: AuditCursor | None = None,
    within: TimeRange | None = None,
) -> list[AuditEntry]:
    """The audit log newest first, optionally made `within` a window; pass the last entry's
    `cursor` as `before` for the next page."""
    async with reading() as tx:
        return await tx.access.list_audit(
            actor=actor, action=action, limit=limit, before=before, within=within
        )
