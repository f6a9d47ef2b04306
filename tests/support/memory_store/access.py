"""`MemoryAccess`: API tokens and the audit log over the `MemoryState`'s collections, with the
SQL store's rules (one live token per name, the log's newest-first order and paging)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING

from cronpilot.domain.access.audit import AuditAction, AuditCursor, AuditEntry, log_order
from cronpilot.domain.access.tokens import ApiToken, ConsoleSession
from cronpilot.domain.errors import ConflictError, TokenNotFound
from cronpilot.domain.ports import AccessRepository
from cronpilot.domain.runs.retention import audit_expired
from cronpilot.domain.schedule.time_range import TimeRange, falls_in

if TYPE_CHECKING:
    from tests.support.memory_store.store import MemoryState


class MemoryAccess(AccessRepository):
    def __init__(self, state: MemoryState) -> None:
        self._state = state

    async def add_token(self, token: ApiToken) -> None:
        async with self._state.lock:
            if any(t.live and t.name == token.name for t in self._state.tokens.values()):
                raise ConflictError(f"a live token is named {token.name!r}")
            self._state.tokens[token.id] = token

    async def get_live_token(self, name_or_id: str) -> ApiToken:
        live = [t for t in self._state.tokens.values() if t.live]
        found = next((t for t in live if t.name == name_or_id), None)
        found = found or next((t for t in live if t.id == name_or_id), None)
        if found is None:
            raise TokenNotFound(name_or_id)
        return found

    async def find_token(self, secret_hash: str) -> ApiToken | None:
        return next(
            (
                t
                for t in self._state.tokens.values()
                if secret_hash in (t.secret_hash, t.previous_hash)
            ),
            None,
        )

    async def list_tokens(self, *, include_revoked: bool = False) -> list[ApiToken]:
        chosen = [t for t in self._state.tokens.values() if include_revoked or t.live]
        return sorted(chosen, key=lambda t: (t.name, t.created_at))

    async def revoke_token(self, token_id: str, actor: str, now: datetime) -> ApiToken:
        async with self._state.lock:
            token = self._state.tokens.get(token_id)
            if token is None or not token.live:
                raise TokenNotFound(token_id)
            revoked = replace(token, revoked_at=now, revoked_by=actor)
            self._state.tokens[token_id] = revoked
        return revoked

    async def rotate_token(self, token: ApiToken) -> ApiToken:
        async with self._state.lock:
            stored = self._state.tokens.get(token.id)
            if stored is None or not stored.live:
                raise TokenNotFound(token.id)
            kept = replace(
                stored,
                secret_hash=token.secret_hash,
                previous_hash=token.previous_hash,
                previous_until=token.previous_until,
            )
            self._state.tokens[token.id] = kept
        return kept

    async def add_session(self, session: ConsoleSession) -> None:
        async with self._state.lock:
            self._state.console_sessions[session.id_hash] = session

    async def find_session(self, id_hash: str) -> ConsoleSession | None:
        return self._state.console_sessions.get(id_hash)

    async def end_session(self, id_hash: str) -> None:
        async with self._state.lock:
            self._state.console_sessions.pop(id_hash, None)

    async def mark_used(self, token_id: str, now: datetime) -> None:
        async with self._state.lock:
            token = self._state.tokens.get(token_id)
            if token is not None:
                self._state.tokens[token_id] = replace(token, last_used_at=now)

    async def record(self, entry: AuditEntry) -> None:
        async with self._state.lock:
            self._state.audit.append(entry)

    async def list_audit(
        self,
        *,
        actor: str | None = None,
        action: AuditAction | None = None,
        limit: int = 100,
        before: AuditCursor | None = None,
        within: TimeRange | None = None,
    ) -> list[AuditEntry]:
        chosen = [
            e
            for e in self._state.audit
            if (actor is None or e.actor == actor)
            and (action is None or e.action == action)
            and falls_in(within, e.at)
            and (before is None or log_order(e) < (before.at, before.id))
        ]
        chosen.sort(key=log_order, reverse=True)
        return chosen[: max(limit, 0)]

    async def prune_audit(self, before: datetime, limit: int) -> int:
        async with self._state.lock:
            doomed = sorted(
                (e for e in self._state.audit if audit_expired(e, before)), key=log_order
            )
            gone = {e.id for e in doomed[: max(limit, 0)]}
            self._state.audit = [e for e in self._state.audit if e.id not in gone]
        return len(gone)
