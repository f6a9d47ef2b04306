"""API tokens and the audit log: creating and revoking tokens (each audited in its own unit of
work), authenticating a request's secret, and reading the log."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Collection
from datetime import datetime, timedelta

from cronpilot.domain.access.access import Principal, Scope, token_actor
from cronpilot.domain.access.audit import AuditAction, AuditCursor, AuditEntry, audit_entry
from cronpilot.domain.access.tokens import (
    DEFAULT_GRACE,
    NAME_RULE,
    NAME_SHAPE,
    SESSION_SPAN,
    ApiToken,
    ConsoleSession,
    check_session_secret,
    hash_secret,
    new_secret,
    opens,
    rotated,
    session_open,
    stamp,
    token_terms,
    use_to_record,
    well_formed,
)
from cronpilot.domain.errors import (
    InvalidTokenName,
    InvalidTokenTerms,
    JobNotFound,
    StoreUnavailable,
    TokenExpired,
    TokenNotFound,
)
from cronpilot.domain.log_extra import log_extra
from cronpilot.domain.model import new_id
from cronpilot.domain.ports import ReadingFactory, Repositories, UnitOfWorkFactory
from cronpilot.domain.schedule.time_range import TimeRange

log = logging.getLogger(__name__)


async def create_token(
    uow: UnitOfWorkFactory,
    name: str,
    scope: Scope,
    actor: str,
    now: datetime,
    *,
    expires_at: datetime | None = None,
    jobs: Collection[str] | None = None,
) -> tuple[ApiToken, str]:
    """A new token and its secret, which is not stored and cannot be shown again; it stops
    working at `expires_at` (None: never) and reaches only `jobs` (None: every job). Raises
    `InvalidTokenName` for a malformed name or one a live token holds, `InvalidTokenTerms`
    for an expiry not in the future or a job that does not exist."""
    if NAME_SHAPE.fullmatch(name) is None:
        raise InvalidTokenName(name, f"is not {NAME_RULE}")
    reached = token_terms(name, now, expires_at, jobs)
    secret = new_secret()
    token = ApiToken(
        new_id(),
        name,
        scope,
        hash_secret(secret),
        now,
        actor,
        expires_at=expires_at,
        jobs=reached,
    )
    async with uow() as tx:
        try:
            await tx.access.get_live_token(name)
        except TokenNotFound:
            pass
        else:
            raise InvalidTokenName(name, "is taken by a live token; revoke it or choose another")
        for job in sorted(reached or ()):
            try:
                await tx.catalog.get_job(job)
            except JobNotFound as error:
                raise InvalidTokenTerms(name, f"cannot be limited to {error}") from error
        await tx.access.add_token(token)
        await tx.access.record(audit_entry(actor, "token_create", name, _terms(token), now))
        await tx.commit()
    log.info(
        "token %s (%s) created by %s",
        name,
        scope.value,
        actor,
        extra=log_extra("token_create", token_id=token.id),
    )
    return token, secret


def _terms(token: ApiToken) -> str:
    """An audit entry's detail for a token: its scope, jobs and expiry."""
    parts = [f"scope {token.scope.value}"]
    if token.jobs is not None:
        parts.append(f"jobs {','.join(sorted(token.jobs))}")
    if token.expires_at is not None:
        parts.append(f"expires {stamp(token.expires_at)}")
    return "; ".join(parts)


async def rotate_token(
    uow: UnitOfWorkFactory,
    name_or_id: str,
    actor: str,
    now: datetime,
    grace: timedelta = DEFAULT_GRACE,
) -> tuple[ApiToken, str]:
    """A new secret for the live token of that name (or id), shown this once; the secret it
    replaces still works for `grace`, then is refused. Raises `TokenNotFound`,
    `InvalidTokenTerms` for a grace out of range."""
    secret = new_secret()
    async with uow() as tx:
        token = await tx.access.get_live_token(name_or_id)
        kept = await tx.access.rotate_token(rotated(token, secret, now, grace))
        detail = f"old secret works until {stamp(now + grace)}"
        await tx.access.record(audit_entry(actor, "token_rotate", token.name, detail, now))
        await tx.commit()
    log.info(
        "token %s rotated by %s",
        token.name,
        actor,
        extra=log_extra("token_rotate", token_id=token.id),
    )
    return kept, secret


async def revoke_token(
    uow: UnitOfWorkFactory, name_or_id: str, actor: str, now: datetime
) -> ApiToken:
    """Revoke the live token of that name (or id): requests with its secret fail from now on.
    Raises `TokenNotFound`."""
    async with uow() as tx:
        token = await tx.access.get_live_token(name_or_id)
        revoked = await tx.access.revoke_token(token.id, actor, now)
        await tx.access.record(audit_entry(actor, "token_revoke", token.name, _terms(token), now))
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
    """The principal whose token `secret` is (actor `token:NAME`, the token's scope and
    jobs), or None for a malformed, unknown or revoked secret. Raises `TokenExpired` for an
    expired token or a rotated-out secret past its grace.

    The token's `last_used_at` is written at most once per `USE_RECORD_INTERVAL` per token,
    outside any unit of work (`store` is the store itself, not a reading unit): most requests
    read one row and write nothing."""
    token = await _admitted(store, secret, now)
    return None if token is None else _principal(token)


def _principal(token: ApiToken) -> Principal:
    return Principal(token_actor(token.name), token.scope, token.jobs)


async def _admitted(store: Repositories, secret: str, now: datetime) -> ApiToken | None:
    if not well_formed(secret):
        return None
    token = await store.access.find_token(hash_secret(secret))
    if token is None or not opens(token, secret, now):
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
    return token


SESSION_PREFIX = "cs_"


async def sign_in(store: Repositories, secret: str, now: datetime) -> tuple[str, Principal] | None:
    """A console session for the token `secret` opens, as (the cookie's random id, the
    principal), or None as `authenticate`; the store keeps only the id's hash, for
    `SESSION_SPAN`. Raises `TokenExpired` as `authenticate`."""
    token = await _admitted(store, secret, now)
    if token is None:
        return None
    session_id = SESSION_PREFIX + secrets.token_urlsafe(32)
    session = ConsoleSession(
        hash_secret(session_id), token.id, now, now + SESSION_SPAN, hash_secret(secret)
    )
    await store.access.add_session(session)
    return session_id, _principal(token)


async def session_principal(
    store: Repositories, session_id: str, now: datetime
) -> Principal | None:
    """Whom a console session acts for: None for an unknown, ended or expired session, or
    one whose token was revoked (an expired or orphaned session is deleted on the way).
    Raises `TokenExpired` when its token has expired, or when the secret that opened it was
    rotated out and its grace is over (that session is deleted)."""
    session = await store.access.find_session(hash_secret(session_id))
    if session is None:
        return None
    if not session_open(session, now):
        await store.access.end_session(session.id_hash)
        return None
    try:
        token = await store.access.get_live_token(session.token_id)
    except TokenNotFound:
        await store.access.end_session(session.id_hash)
        return None
    if token.expires_at is not None and now >= token.expires_at:
        raise TokenExpired(token.name, stamp(token.expires_at))
    try:
        check_session_secret(session, token, now)
    except TokenExpired:
        await store.access.end_session(session.id_hash)
        raise
    return _principal(token)


async def sign_out(store: Repositories, session_id: str) -> None:
    """End the session: its cookie, even copied elsewhere, opens nothing from now on."""
    await store.access.end_session(hash_secret(session_id))


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
