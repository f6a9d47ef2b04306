"""`ClaimRepository` over SQL: the claim, the fenced finish, release, abandon and the reaper.

This is the SQL that matters, written once. Every state change goes through
`domain.transitions`, so these rows end up exactly as the in-memory store's entities would.
`now` always comes from the caller: no statement here asks the database for the time.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    BindParameter,
    Integer,
    Select,
    String,
    bindparam,
    cast,
    delete,
    func,
    literal,
    select,
    update,
)
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncConnection

from adapters.crypto import SecretUndecryptable
from adapters.sql.engine import Database
from adapters.sql.finishes import FinishBatcher
from adapters.sql.notifications_repo import add_notifications
from adapters.sql.rows import (
    endpoint_from_row,
    lock_endpoint,
    run_from_row,
    run_values,
    save_endpoint,
    save_endpoint_state,
    select_endpoints,
    state_values,
)
from adapters.sql.tables import SLOT_KEY, UtcDateTime, endpoints, jobs, runs
from domain.alerts import run_notifications
from domain.errors import LeaseLost
from domain.governor import missed
from domain.model import (
    BodyAbsence,
    Claim,
    Endpoint,
    ErrorKind,
    Response,
    Run,
    RunStatus,
    RunTrigger,
    ScheduleSource,
    new_id,
)
from domain.ports import SecretCipher
from domain.transitions import (
    abandoned_run,
    after_slot,
    caught_up,
    claim_of,
    finished_run,
    replanned,
    started_run,
)

logger = logging.getLogger(__name__)

UNDECRYPTABLE_MESSAGE = (
    "not called: a secret header cannot be decrypted with this worker's key "
    "(CRONPILOT_SECRET_KEY differs from the key that stored it)"
)


@dataclass(frozen=True, slots=True)
class LeaseRequest:
    now: datetime
    due_by: datetime
    worker_id: str
    until: datetime
    limit: int


Leased = tuple[Mapping[str, Any], str | None, str | None]
"""A leased endpoint's row with the run id and trace id inserted for its slot (None: slot
taken). Rows, not entities: turning them into endpoints opens their secrets, which may fail."""


def claim_candidates(
    now: datetime | BindParameter[Any], limit: int | BindParameter[Any]
) -> Select[Any]:
    """Due, unleased endpoints, earliest first: served by the partial index `CLAIM_INDEX`."""
    return (
        select(endpoints.c.id)
        .where(endpoints.c.next_run_at <= now, endpoints.c.lease_owner.is_(None))
        .order_by(endpoints.c.next_run_at)
        .limit(limit)
    )


def _hex_id() -> Any:
    """`new_id()`'s format (uuid4 hex) computed in PostgreSQL, for rows made inside SQL."""
    return func.replace(cast(func.gen_random_uuid(), String), "-", "")


async def _lease_due_postgres(conn: AsyncConnection, lease: LeaseRequest) -> list[Leased]:
    """One statement: lock due rows (skipping rows other claimers hold), lease them, and insert
    their `running` runs; a slot that already has a run inserts nothing (ON CONFLICT).

        WITH due AS (SELECT id FROM endpoints WHERE next_run_at <= :due_by AND lease_owner IS NULL
                     ORDER BY next_run_at LIMIT :n FOR UPDATE SKIP LOCKED),
             leased AS (UPDATE endpoints SET lease_owner = :worker, lease_until = :until
                        FROM due WHERE endpoints.id = due.id RETURNING endpoints.*),
             started AS (INSERT INTO runs (...) SELECT ... FROM leased
                         ON CONFLICT ON CONSTRAINT uq_runs_endpoint_slot DO NOTHING
                         RETURNING endpoint_id, id, trace_id)
        SELECT leased.*, jobs.name, started.id, started.trace_id
        FROM leased JOIN jobs ... LEFT JOIN started ... ORDER BY leased.next_run_at
    """
    result = await conn.execute(
        _lease_due_postgres_statement(),
        {
            "now": lease.now,
            "due_by": lease.due_by,
            "limit": lease.limit,
            "worker_id": lease.worker_id,
            "until": lease.until,
        },
    )
    return [(row, row["run_id"], row["run_trace_id"]) for row in result.mappings().all()]


@functools.cache
def _lease_due_postgres_statement() -> Select[Any]:
    """The statement of `_lease_due_postgres`, built once with bound parameters `now`,
    `due_by`, `limit`, `worker_id` and `until`: building its CTEs takes longer than PostgreSQL
    takes to run it."""
    now = bindparam("now", type_=UtcDateTime)
    worker_id = bindparam("worker_id", type_=String)
    due = claim_candidates(
        bindparam("due_by", type_=UtcDateTime), bindparam("limit", type_=Integer)
    )
    due_cte = due.with_for_update(skip_locked=True).cte("due")
    leased = (
        update(endpoints)
        .where(endpoints.c.id == due_cte.c.id)
        .values(lease_owner=worker_id, lease_until=bindparam("until", type_=UtcDateTime))
        .returning(*endpoints.c)
        .cte("leased")
    )
    # Mirrors `started_run()`, which the SQLite path calls directly; the slot is the grid slot
    # (`Endpoint.next_slot`), off which jitter may have moved the call.
    new_runs = select(
        _hex_id(),
        leased.c.id,
        leased.c.job_id,
        _hex_id(),
        literal(RunTrigger.SCHEDULE.value),
        leased.c.next_run_source,
        literal(RunStatus.RUNNING.value),
        func.coalesce(leased.c.next_slot_at, leased.c.next_run_at),
        now,
        worker_id,
        literal(1),
    )
    started = (
        pg_insert(runs)
        .from_select(
            [
                runs.c.id,
                runs.c.endpoint_id,
                runs.c.job_id,
                runs.c.trace_id,
                runs.c.trigger,
                runs.c.schedule_source,
                runs.c.status,
                runs.c.slot_at,
                runs.c.started_at,
                runs.c.worker_id,
                runs.c.attempt,
            ],
            new_runs,
        )
        .on_conflict_do_nothing(constraint=SLOT_KEY)
        .returning(runs.c.endpoint_id, runs.c.id, runs.c.trace_id)
        .cte("started")
    )
    return (
        select(
            *leased.c,
            jobs.c.name.label("job_name"),
            started.c.id.label("run_id"),
            started.c.trace_id.label("run_trace_id"),
        )
        .join(jobs, jobs.c.id == leased.c.job_id)
        .outerjoin(started, started.c.endpoint_id == leased.c.id)
        .order_by(leased.c.next_run_at)
    )


async def _lease_due_sqlite(conn: AsyncConnection, lease: LeaseRequest) -> list[Leased]:
    """SQLite has one writer at a time and the transaction began IMMEDIATE, so no other claimer
    can interleave: lease with UPDATE … RETURNING, then insert each slot's run."""
    due = claim_candidates(lease.due_by, lease.limit)
    result = await conn.execute(
        update(endpoints)
        .where(endpoints.c.id.in_(due.scalar_subquery()))
        .values(lease_owner=lease.worker_id, lease_until=lease.until)
        .returning(endpoints.c.id)
    )
    leased_ids = result.scalars().all()
    rows = await conn.execute(
        select_endpoints().where(endpoints.c.id.in_(leased_ids)).order_by(endpoints.c.next_run_at)
    )
    leased: list[Leased] = []
    for row in rows.mappings().all():
        run_id, trace_id = await _start_run(conn, row, lease, "sqlite")
        leased.append((row, run_id, trace_id))
    return leased


async def _start_run(
    conn: AsyncConnection, row: Mapping[str, Any], lease: LeaseRequest, dialect: str
) -> tuple[str | None, str | None]:
    """Insert the `running` run of a leased endpoint's next slot; its run id and trace id, or
    Nones when the slot already has a run."""
    claim = claim_of(endpoint_from_row(row, None), new_id(), new_id(), lease.until)
    run = started_run(claim, lease.worker_id, lease.now)
    insert = pg_insert if dialect == "postgresql" else sqlite_insert
    inserted = await conn.execute(
        insert(runs)
        .values(run_values(run))
        .on_conflict_do_nothing(index_elements=[runs.c.endpoint_id, runs.c.slot_at])
    )
    if inserted.rowcount == 0:
        return None, None
    return run.id, run.trace_id


class SqlClaims:
    def __init__(self, db: Database, cipher: SecretCipher | None) -> None:
        self._db = db
        self._cipher = cipher
        self._finishes = FinishBatcher(db)

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
        lease_due = _lease_due_postgres if self._db.dialect == "postgresql" else _lease_due_sqlite
        claims: list[Claim] = []
        async with self._db.write() as conn:
            for leased in await lease_due(conn, lease):
                row, run_id, trace_id = leased
                if missed(row["next_run_at"], ScheduleSource(row["next_run_source"]), now):
                    caught = await self._catch_up(conn, leased, lease)
                    if caught is None:
                        continue
                    row, run_id, trace_id = caught
                if run_id is None or trace_id is None:
                    await self._skip_taken_slot(conn, endpoint_from_row(row, None), now)
                    continue
                try:
                    endpoint = endpoint_from_row(row, self._cipher)
                except SecretUndecryptable:
                    await self._fail_undecryptable(conn, endpoint_from_row(row, None), run_id, now)
                    continue
                claims.append(claim_of(endpoint, run_id, trace_id, lease.until))
        if claims:
            logger.debug(
                "claimed", extra={"action": "claim", "worker": worker_id, "count": len(claims)}
            )
        return claims

    async def _catch_up(
        self, conn: AsyncConnection, leased: Leased, lease: LeaseRequest
    ) -> Leased | None:
        """A missed baseline slot, leased with its run inserted (unless taken): moved, when its
        catch-up rule says so (`transitions.caught_up`), to the slot that runs instead, whose
        run replaces the missed slot's; or, when that slot is not due yet, planned and let go
        (None)."""
        row, run_id, _ = leased
        missed_endpoint = endpoint_from_row(row, None)
        moved = caught_up(missed_endpoint, lease.now)
        if moved is None:
            return leased
        assert moved.next_run_at is not None
        due = moved.next_run_at <= lease.due_by
        logger.info(
            "%s missed slot %s; catch_up %s: %s slot %s",
            missed_endpoint.ref,
            missed_endpoint.next_slot,
            moved.spec.catch_up,
            "running" if due else "waiting for",
            moved.next_slot,
            extra={
                "action": "catch_up",
                "endpoint_id": moved.id,
                "missed_slot": str(missed_endpoint.next_slot),
                "slot": str(moved.next_slot),
            },
        )
        if run_id is not None:
            await conn.execute(delete(runs).where(runs.c.id == run_id))
        if not due:
            await save_endpoint_state(conn, replace(moved, lease_owner=None, lease_until=None))
            return None
        await save_endpoint_state(conn, moved)
        moved_row = {**row, **state_values(moved)}
        new_run_id, trace_id = await _start_run(conn, moved_row, lease, self._db.dialect)
        return moved_row, new_run_id, trace_id

    async def _skip_taken_slot(
        self, conn: AsyncConnection, endpoint: Endpoint, now: datetime
    ) -> None:
        """The slot already has a run: count it as done (without touching the failure streak)
        and plan past it, so the endpoint cannot be claimed for that slot again."""
        assert endpoint.next_slot is not None
        logger.warning(
            "slot already run; re-planning",
            extra={"action": "claim_skip_slot", "endpoint_id": endpoint.id},
        )
        await save_endpoint_state(conn, after_slot(endpoint, endpoint.next_slot, None, now))

    async def _fail_undecryptable(
        self, conn: AsyncConnection, sealed: Endpoint, run_id: str, now: datetime
    ) -> None:
        """A secret header of this endpoint cannot be opened with our key, so it cannot be
        called: its run fails at once with the reason, and the endpoint is planned past the slot
        (backing off like any failure) while the rest of the batch goes ahead. `sealed` keeps
        its headers as stored, and only its schedule state is saved, so the secrets survive."""
        assert sealed.next_slot is not None
        logger.error(
            "cannot open a secret header of %s; run failed",
            sealed.ref,
            extra={"action": "claim_undecryptable", "endpoint_id": sealed.id, "run_id": run_id},
        )
        row = (await conn.execute(select(runs).where(runs.c.id == run_id))).mappings().one()
        failure = Response(
            status_code=None,
            body_absence=BodyAbsence.NO_RESPONSE,
            error_kind=ErrorKind.INTERNAL,
            error_message=UNDECRYPTABLE_MESSAGE,
            started_at=now,
            finished_at=now,
        )
        run = finished_run(run_from_row(row), failure, now)
        await self._save_run(conn, run)
        ended = after_slot(sealed, sealed.next_slot, False, now)
        await save_endpoint_state(conn, ended)
        await add_notifications(conn, run_notifications(sealed, ended, run, now))

    async def extend_lease(self, claim: Claim, worker_id: str, until: datetime) -> None:
        async with self._db.write() as conn:
            result = await conn.execute(
                update(endpoints)
                .where(endpoints.c.id == claim.endpoint.id, endpoints.c.lease_owner == worker_id)
                .values(lease_until=until)
            )
            if result.rowcount == 0:
                raise LeaseLost(claim.endpoint.id, worker_id)

    async def _fenced(
        self, conn: AsyncConnection, claim: Claim, worker_id: str
    ) -> tuple[Endpoint, Run] | None:
        """The endpoint (locked) and its running run, if this claim still holds the lease.

        The lease owner alone is not enough: after a reap the same worker may hold a newer
        lease on the endpoint, so the claim's own run must still be `running` too."""
        endpoint = await lock_endpoint(conn, claim.endpoint.id, self._cipher)
        if endpoint is None or endpoint.lease_owner != worker_id:
            return None
        row = (
            (await conn.execute(select(runs).where(runs.c.id == claim.run_id)))
            .mappings()
            .one_or_none()
        )
        if row is None or row["status"] != RunStatus.RUNNING.value:
            return None
        return endpoint, run_from_row(row)

    async def _save_run(self, conn: AsyncConnection, run: Run) -> None:
        await conn.execute(update(runs).where(runs.c.id == run.id).values(run_values(run)))

    async def finish(self, claim: Claim, worker_id: str, response: Response, now: datetime) -> Run:
        # Concurrent finishes share transactions (`adapters.sql.finishes`); each is still
        # fenced on its own lease and run.
        return await self._finishes.finish(claim, worker_id, response, now)

    async def release(self, claim: Claim, worker_id: str) -> None:
        async with self._db.write() as conn:
            fenced = await self._fenced(conn, claim, worker_id)
            if fenced is None:
                return
            endpoint, running = fenced
            await conn.execute(delete(runs).where(runs.c.id == running.id))
            await save_endpoint(
                conn, replace(endpoint, lease_owner=None, lease_until=None), self._cipher
            )

    async def abandon(self, claim: Claim, worker_id: str, reason: str, now: datetime) -> None:
        async with self._db.write() as conn:
            fenced = await self._fenced(conn, claim, worker_id)
            if fenced is None:
                return
            endpoint, running = fenced
            await self._save_run(conn, abandoned_run(running, ErrorKind.SHUTDOWN, reason, now))
            await save_endpoint(conn, after_slot(endpoint, claim.slot_at, None, now), self._cipher)

    async def reap(self, now: datetime) -> int:
        reaped = 0
        async with self._db.write() as conn:
            expired = await conn.execute(
                select_endpoints()
                .where(endpoints.c.lease_owner.isnot(None), endpoints.c.lease_until < now)
                .with_for_update(of=endpoints, skip_locked=True)
            )
            for row in expired.mappings().all():
                # Reaping changes the schedule state only: the secrets need not (and, stored with
                # another key, could not) be opened.
                reaped += await self._reap_endpoint(conn, endpoint_from_row(row, None), now)
        if reaped:
            logger.warning(
                "reaped runs of expired leases", extra={"action": "reap", "count": reaped}
            )
        return reaped

    async def _reap_endpoint(self, conn: AsyncConnection, endpoint: Endpoint, now: datetime) -> int:
        running = await conn.execute(
            select(runs).where(
                runs.c.endpoint_id == endpoint.id, runs.c.status == RunStatus.RUNNING.value
            )
        )
        last_slot: datetime | None = None
        count = 0
        for row in running.mappings().all():
            run = run_from_row(row)
            reason = f"lease of worker {run.worker_id} expired"
            await self._save_run(conn, abandoned_run(run, ErrorKind.LEASE_EXPIRED, reason, now))
            last_slot = run.slot_at if last_slot is None else max(last_slot, run.slot_at)
            count += 1
        freed = replace(endpoint, lease_owner=None, lease_until=None)
        if last_slot is None:
            await save_endpoint_state(conn, replanned(freed, now))
        else:
            await save_endpoint_state(conn, after_slot(freed, last_slot, None, now))
        return count

    async def next_due_at(self) -> datetime | None:
        query = select(func.min(endpoints.c.next_run_at)).where(endpoints.c.lease_owner.is_(None))
        async with self._db.read() as conn:
            value: datetime | None = (await conn.execute(query)).scalar_one()
        return value
