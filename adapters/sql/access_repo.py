"""`AccessRepository` over SQL: API tokens and the audit log."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import delete, insert, or_, select, update
from sqlalchemy.engine import RowMapping

from cronpilot.adapters.sql.engine import Database
from cronpilot.adapters.sql.field_rows import from_fields
from cronpilot.adapters.sql.keyset import newest_first
from cronpilot.adapters.sql.retention import delete_oldest
from cronpilot.adapters.sql.tables import api_tokens, audit_log, console_sessions
from cronpilot.domain.access.access import Scope
from cronpilot.domain.access.audit import AuditAction, AuditCursor, AuditEntry
from cronpilot.domain.access.tokens import ApiToken, ConsoleSession
from cronpilot.domain.errors import TokenNotFound
from cronpilot.domain.paging import Cursor
from cronpilot.domain.ports import AccessRepository
from cronpilot.domain.schedule.time_range import TimeRange


def _token(row: RowMapping) -> ApiToken:
    return from_fields(
        ApiToken,
        row,
        scope=Scope(row["scope"]),
        jobs=None if row["jobs"] is None else frozenset(row["jobs"]),
    )


def _entry(row: RowMapping) -> AuditEntry:
    return AuditEntry(
        row["id"], row["at"], row["actor"], row["action"], row["target"], row["detail"]
    )


class SqlAccess(AccessRepository):
    def __init__(self, db: Database) -> None:
        self._db = db

    async def add_token(self, token: ApiToken) -> None:
        # A second live token of one name breaks `LIVE_TOKEN_NAME`: `ConflictError`.
        values: dict[str, Any] = {
            "id": token.id,
            "name": token.name,
            "scope": token.scope.value,
            "secret_hash": token.secret_hash,
            "created_at": token.created_at,
            "created_by": token.created_by,
            "revoked_at": token.revoked_at,
            "revoked_by": token.revoked_by,
            "last_used_at": token.last_used_at,
            "expires_at": token.expires_at,
            "jobs": None if token.jobs is None else sorted(token.jobs),
            "previous_hash": token.previous_hash,
            "previous_until": token.previous_until,
        }
        await self._db.write_one(insert(api_tokens).values(values))

    async def get_live_token(self, name_or_id: str) -> ApiToken:
        table = api_tokens.c
        query = select(api_tokens).where(
            table.revoked_at.is_(None), or_(table.name == name_or_id, table.id == name_or_id)
        )
        async with self._db.read() as conn:
            rows = (await conn.execute(query)).mappings().all()
        tokens = [_token(row) for row in rows]
        # A name wins over an id: names are what people type.
        found = next((t for t in tokens if t.name == name_or_id), None) or next(iter(tokens), None)
        if found is None:
            raise TokenNotFound(name_or_id)
        return found

    async def find_token(self, secret_hash: str) -> ApiToken | None:
        table = api_tokens.c
        query = select(api_tokens).where(
            or_(table.secret_hash == secret_hash, table.previous_hash == secret_hash)
        )
        async with self._db.read() as conn:
            row = (await conn.execute(query)).mappings().one_or_none()
        return None if row is None else _token(row)

    async def list_tokens(self, *, include_revoked: bool = False) -> list[ApiToken]:
        table = api_tokens.c
        query = select(api_tokens).order_by(table.name, table.created_at)
        if not include_revoked:
            query = query.where(table.revoked_at.is_(None))
        async with self._db.read() as conn:
            rows = (await conn.execute(query)).mappings().all()
        return [_token(row) for row in rows]

    async def revoke_token(self, token_id: str, actor: str, now: datetime) -> ApiToken:
        table = api_tokens.c
        statement = (
            update(api_tokens)
            .where(table.id == token_id, table.revoked_at.is_(None))
            .values(revoked_at=now, revoked_by=actor)
            .returning(*api_tokens.c)
        )
        async with self._db.write() as conn:
            row = (await conn.execute(statement)).mappings().one_or_none()
        if row is None:
            raise TokenNotFound(token_id)
        return _token(row)

    async def rotate_token(self, token: ApiToken) -> ApiToken:
        table = api_tokens.c
        statement = (
            update(api_tokens)
            .where(table.id == token.id, table.revoked_at.is_(None))
            .values(
                secret_hash=token.secret_hash,
                previous_hash=token.previous_hash,
                previous_until=token.previous_until,
            )
            .returning(*api_tokens.c)
        )
        async with self._db.write() as conn:
            row = (await conn.execute(statement)).mappings().one_or_none()
        if row is None:
            raise TokenNotFound(token.id)
        return _token(row)

    async def add_session(self, session: ConsoleSession) -> None:
        values = {
            "id_hash": session.id_hash,
            "token_id": session.token_id,
            "created_at": session.created_at,
            "expires_at": session.expires_at,
            "secret_hash": session.secret_hash,
        }
        await self._db.write_one(insert(console_sessions).values(values))

    async def find_session(self, id_hash: str) -> ConsoleSession | None:
        query = select(console_sessions).where(console_sessions.c.id_hash == id_hash)
        async with self._db.read() as conn:
            row = (await conn.execute(query)).mappings().one_or_none()
        if row is None:
            return None
        return ConsoleSession(
            row["id_hash"],
            row["token_id"],
            row["created_at"],
            row["expires_at"],
            row["secret_hash"],
        )

    async def end_session(self, id_hash: str) -> None:
        statement = delete(console_sessions).where(console_sessions.c.id_hash == id_hash)
        await self._db.write_one(statement)

    async def mark_used(self, token_id: str, now: datetime) -> None:
        statement = update(api_tokens).where(api_tokens.c.id == token_id)
        await self._db.write_one(statement.values(last_used_at=now))

    async def record(self, entry: AuditEntry) -> None:
        values = {
            "id": entry.id,
            "at": entry.at,
            "actor": entry.actor,
            "action": entry.action,
            "target": entry.target,
            "detail": entry.detail,
        }
        await self._db.write_one(insert(audit_log).values(values))

    async def list_audit(
        self,
        *,
        actor: str | None = None,
        action: AuditAction | None = None,
        limit: int = 100,
        before: AuditCursor | None = None,
        within: TimeRange | None = None,
    ) -> list[AuditEntry]:
        cursor = None if before is None else Cursor(before.at, before.id)
        query = newest_first(audit_log, audit_log.c.at, cursor, within, actor=actor, action=action)
        async with self._db.read() as conn:
            rows = (await conn.execute(query.limit(max(limit, 0)))).mappings().all()
        return [_entry(row) for row in rows]

    async def prune_audit(self, before: datetime, limit: int) -> int:
        table = audit_log.c
        oldest = (table.at, table.id)
        return await delete_oldest(self._db, audit_log, table.at < before, oldest, limit)
