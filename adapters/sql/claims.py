"""`ClaimRepository` over SQL: the claim, the fenced finish, release, abandon and the reaper.

This is the SQL that matters, written once, in modules by what they claim: the slots of due
endpoints (`slot_claims`), the queued runs (`queued_claims`), both in PostgreSQL's one
statement (`claim_statement`), and the leases kept, given back and reaped (`leases`). Every
state change goes through `domain.runs.transitions`, so these rows end up exactly as the
in-memory store's entities would. `now` always comes from the caller: no statement here asks
the database for the time.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from sqlalchemy import func, select

from cronpilot.adapters.sql import leases
from cronpilot.adapters.sql.claim_request import LeaseRequest, held_until, job_holds
from cronpilot.adapters.sql.claim_statement import claim_postgres
from cronpilot.adapters.sql.engine import Database
from cronpilot.adapters.sql.finishes import finish_many
from cronpilot.adapters.sql.limits_claim import after_hold, allowed_sqlite
from cronpilot.adapters.sql.queued_claims import queued_claims, start_queued_sqlite
from cronpilot.adapters.sql.run_places import queue_runs
from cronpilot.adapters.sql.slot_claims import lease_due_sqlite, slot_claims
from cronpilot.adapters.sql.tables import IS_QUEUED, endpoints, jobs, limits, run_queue
from cronpilot.domain.errors import CronpilotError
from cronpilot.domain.model import Claim, Finish, Recorded, Run
from cronpilot.domain.ports import ClaimRepository, SecretCipher


class SqlClaims(ClaimRepository):
    def __init__(self, db: Database, cipher: SecretCipher | None) -> None:
        self._db = db
        self._cipher = cipher

    async def claim_due(
        self,
        now: datetime,
        worker_id: str,
        lease_seconds: float,
        limit: int,
        due_by: datetime | None = None,
    ) -> list[Claim]:
        if limit <= 0:
            return []
        horizon = now if due_by is None else max(now, due_by)
        lease = LeaseRequest(now, horizon, worker_id, now + timedelta(seconds=lease_seconds), limit)
        # The one dialect difference: PostgreSQL serves many concurrent claimers with
        # FOR UPDATE SKIP LOCKED in one statement; SQLite serialises writers, so a plain
        # UPDATE … RETURNING inside BEGIN IMMEDIATE is already exclusive.
        if self._db.dialect == "postgresql":
            async with self._db.driver(transaction=True) as (conn, driver):
                # Queued runs first (they were asked for by hand, and are few), of the
                # endpoints whose own schedule they may go before (`queued_claims`).
                started, slots = await claim_postgres(driver, lease)
                claims = await queued_claims(self._cipher, conn, started, lease)
                return claims + await slot_claims(
                    conn,
                    slots,
                    lease,
                    dialect=self._db.dialect,
                    cipher=self._cipher,
                    versioned=True,
                )
        async with self._db.write() as conn:
            holds = job_holds(endpoints.c.job_id, now)
            within = await allowed_sqlite(conn, horizon, now, limit, holds)
            started = await start_queued_sqlite(conn, lease, within)
            claims = await queued_claims(self._cipher, conn, started, lease)
            rest = replace(lease, limit=limit - len(claims))
            slots = await lease_due_sqlite(conn, rest, within) if rest.limit > 0 else []
            return claims + await slot_claims(
                conn,
                slots,
                rest,
                dialect=self._db.dialect,
                cipher=self._cipher,
                versioned=False,
            )

    async def extend_lease(self, claim: Claim, worker_id: str, until: datetime) -> None:
        await leases.extend_lease(self._db, claim, worker_id, until)

    async def finish_many(self, finishes: Sequence[Finish]) -> list[Recorded | CronpilotError]:
        # One transaction for the batch (`adapters.sql.finishes`); each is still fenced on its
        # own lease and run.
        return await finish_many(self._db, self._cipher, finishes)

    async def release(self, claim: Claim, worker_id: str) -> None:
        await leases.release(self._db, self._cipher, claim, worker_id)

    async def abandon(self, claim: Claim, worker_id: str, reason: str, now: datetime) -> None:
        await leases.abandon(self._db, self._cipher, claim, worker_id, reason=reason, now=now)

    async def cancel(self, claim: Claim, worker_id: str, now: datetime) -> None:
        await leases.cancel(self._db, self._cipher, claim, worker_id, now=now)

    async def cancels_asked(self, run_ids: Collection[str]) -> set[str]:
        return await leases.cancels_asked(self._db, run_ids)

    async def reap(self, now: datetime) -> int:
        return await leases.reap(self._db, now)

    async def next_due_at(self) -> datetime | None:
        # Mirrors `domain.runs.claiming.next_due` (proven by
        # `tests/contract/test_rules_contract.py:: test_a_claim_takes_what_the_domain_picks`).
        slot = (
            select(func.min(held_until(after_hold(endpoints.c.next_run_at))))
            .join(jobs, jobs.c.id == endpoints.c.job_id)
            .outerjoin(limits, limits.c.key == endpoints.c.limit_key)
            .where(endpoints.c.lease_owner.is_(None))
        )
        queued = (
            select(func.min(held_until(after_hold(run_queue.c.due_at))))
            .join(endpoints, endpoints.c.id == run_queue.c.endpoint_id)
            .join(jobs, jobs.c.id == endpoints.c.job_id)
            .outerjoin(limits, limits.c.key == endpoints.c.limit_key)
            .where(IS_QUEUED, endpoints.c.lease_owner.is_(None))
        )
        query = select(slot.scalar_subquery(), queued.scalar_subquery())
        async with self._db.read() as conn:
            times = (await conn.execute(query)).one()
        return min((time for time in times if time is not None), default=None)

    async def enqueue(self, queued: Sequence[Run]) -> list[Run]:
        async with self._db.write() as conn:
            return await queue_runs(conn, queued)
