"""API tokens, console sessions and the audit log."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from cronpilot.domain.access.audit import AuditAction, AuditCursor, AuditEntry
    from cronpilot.domain.access.tokens import ApiToken, ConsoleSession
    from cronpilot.domain.schedule.time_range import TimeRange


class AccessRepository(Protocol):
    """API tokens and the audit log. Audit entries are written by the use cases, in the unit of
    work of the change they record."""

    async def add_token(self, token: ApiToken) -> None:
        """Store a new token. Raises `ConflictError` when a live token has its name: callers
        check first (`get_live_token`), the store's unique key on live names stops a race."""
        ...

    async def get_live_token(self, name_or_id: str) -> ApiToken:
        """The live token of that name, else the live token of that id. Raises
        `TokenNotFound`."""
        ...

    async def find_token(self, secret_hash: str) -> ApiToken | None:
        """The token, live or revoked, whose secret (or replaced secret, `previous_hash`)
        hashes to `secret_hash`; None if none."""
        ...

    async def rotate_token(self, token: ApiToken) -> ApiToken:
        """Store the secret hashes of `token` (`secret_hash`, `previous_hash`,
        `previous_until`) on the live token of its id; returns it as stored. Raises
        `TokenNotFound` when no live token has that id."""
        ...

    async def add_session(self, session: ConsoleSession) -> None:
        """Store a new console session."""
        ...

    async def find_session(self, id_hash: str) -> ConsoleSession | None:
        """The console session of that id's hash, expired or not; None if none."""
        ...

    async def end_session(self, id_hash: str) -> None:
        """Delete the console session of that id's hash; nothing if there is none."""
        ...

    async def list_tokens(self, *, include_revoked: bool = False) -> list[ApiToken]:
        """Live tokens (and revoked ones if asked) by name, then creation time."""
        ...

    async def revoke_token(self, token_id: str, actor: str, now: datetime) -> ApiToken:
        """Revoke a live token at `now` for `actor`; returns it revoked. Raises `TokenNotFound`
        when no live token has that id (revoked already, or never was)."""
        ...

    async def mark_used(self, token_id: str, now: datetime) -> None:
        """Set the token's `last_used_at` to `now`; nothing for an unknown id."""
        ...

    async def record(self, entry: AuditEntry) -> None:
        """Append `entry` to the audit log."""
        ...

    async def list_audit(
        self,
        *,
        actor: str | None = None,
        action: AuditAction | None = None,
        limit: int = 100,
        before: AuditCursor | None = None,
        within: TimeRange | None = None,
    ) -> list[AuditEntry]:
        """Entries newest first (by `at`, then id, both descending), optionally of one actor
        or action or made `within` a window, those after `before` in that order when it is
        given (the next page)."""
        ...

    async def prune_audit(self, before: datetime, limit: int) -> int:
        """Delete up to `limit` audit entries made before `before`, oldest first, in one
        transaction; returns how many."""
        ...
