"""The keeping of a claim's lease: extended while its run goes on, given back (release,
abandon, cancel) under the fence of the lease and its run, and reaped when it expires."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import replace
from datetime import datetime

from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from cronpilot.adapters.sql.engine import Database
from cronpilot.adapters.sql.rows import (
    endpoint_from_row,
    lock_endpoint,
    save_endpoint,
    save_endpoint_state,
    select_endpoints,
)
from cronpilot.adapters.sql.run_places import move_to_history, save_run
from cronpilot.adapters.sql.run_rows import run_from_row
from cronpilot.adapters.sql.tables import HOLDS_LEASE, IS_RUNNING, endpoints, run_queue
from cronpilot.domain.errors import LeaseLost
from cronpilot.domain.model import Claim, Endpoint, ErrorKind, Run, RunStatus
from cronpilot.domain.ports import SecretCipher
from cronpilot.domain.runs.cancelling import cancelled_run
from cronpilot.domain.runs.transitions import abandoned_run, after_reap, after_run, runs_alone
from cronpilot.domain.schedule.overlap import given_back


async def extend_lease(db: Database, claim: Claim, worker_id: str, until: datetime) -> None:
    if runs_alone(claim):
        extended = (
            update(run_queue)
            .where(run_queue.c.id == claim.run_id, IS_RUNNING)
            .values(lease_until=until)
        )
    else:
        extended = (
            update(endpoints)
            .where(endpoints.c.id == claim.endpoint.id, endpoints.c.lease_owner == worker_id)
            .values(lease_until=until)
        )
    async with db.write() as conn:
        result = await conn.execute(extended)
        if result.rowcount == 0:
            raise LeaseLost(claim.endpoint.id, worker_id)


async def _fenced(
    conn: AsyncConnection, cipher: SecretCipher | None, claim: Claim, worker_id: str
) -> tuple[Endpoint, Run] | None:
    """The endpoint (locked) and its running run, if this claim still holds the lease.

    The lease owner alone is not enough: after a reap the same worker may hold a newer
    lease on the endpoint, so the claim's own run must still be `running` too. A run that
    holds its own lease (`runs_alone`) needs only that."""
    endpoint = await lock_endpoint(conn, claim.endpoint.id, cipher)
    if endpoint is None or (endpoint.lease_owner != worker_id and not runs_alone(claim)):
        return None
    row = (
        (await conn.execute(select(run_queue).where(run_queue.c.id == claim.run_id)))
        .mappings()
        .one_or_none()
    )
    if row is None or row["status"] != RunStatus.RUNNING.value:
        return None
    return endpoint, run_from_row(row)


async def release(db: Database, cipher: SecretCipher | None, claim: Claim, worker_id: str) -> None:
    async with db.write() as conn:
        fenced = await _fenced(conn, cipher, claim, worker_id)
        if fenced is None:
            return
        endpoint, running = fenced
        if runs_alone(claim):
            await conn.execute(delete(run_queue).where(run_queue.c.id == running.id))
            await save_endpoint_state(conn, given_back(endpoint, claim))
            return
        if claim.queued is None:
            await conn.execute(delete(run_queue).where(run_queue.c.id == running.id))
        else:
            await save_run(conn, claim.queued)
        await save_endpoint(conn, replace(endpoint, lease_owner=None, lease_until=None), cipher)


async def _end_run(
    db: Database,
    cipher: SecretCipher | None,
    claim: Claim,
    worker_id: str,
    *,
    now: datetime,
    ended: Callable[[Run], Run],
) -> None:
    """End the claim's run as `ended` makes it (abandoned, cancelled) and, unless the run held
    its own lease, let its endpoint go, planned past the run; nothing when the claim has lost
    its lease."""
    async with db.write() as conn:
        fenced = await _fenced(conn, cipher, claim, worker_id)
        if fenced is None:
            return
        endpoint, running = fenced
        await save_run(conn, ended(running))
        if not runs_alone(claim):
            await save_endpoint(conn, after_run(endpoint, running, None, now), cipher)


async def abandon(
    db: Database,
    cipher: SecretCipher | None,
    claim: Claim,
    worker_id: str,
    *,
    reason: str,
    now: datetime,
) -> None:
    await _end_run(
        db,
        cipher,
        claim,
        worker_id,
        now=now,
        ended=lambda running: abandoned_run(running, ErrorKind.SHUTDOWN, reason, now),
    )


async def cancel(
    db: Database, cipher: SecretCipher | None, claim: Claim, worker_id: str, *, now: datetime
) -> None:
    await _end_run(
        db, cipher, claim, worker_id, now=now, ended=lambda running: cancelled_run(running, now)
    )


async def cancels_asked(db: Database, run_ids: Collection[str]) -> set[str]:
    """Which of these running runs someone asked to cancel (read with each heartbeat)."""
    if not run_ids:
        return set()
    query = select(run_queue.c.id).where(
        run_queue.c.id.in_(list(run_ids)), run_queue.c.cancel_requested_by.isnot(None)
    )
    async with db.read() as conn:
        return set((await conn.execute(query)).scalars())


async def reap(db: Database, now: datetime) -> int:
    reaped = 0
    async with db.write() as conn:
        # Mirrors `domain.runs.claiming.lease_expired` (proven by `tests/contract/
        # test_rules_contract.py::test_the_reaper_ends_the_leases_the_domain_says`).
        expired = await conn.execute(
            select_endpoints()
            .where(endpoints.c.lease_owner.isnot(None), endpoints.c.lease_until < now)
            .with_for_update(of=endpoints, skip_locked=True)
        )
        for row in expired.mappings().all():
            # Reaping changes the schedule state only: the secrets need not (and, stored with
            # another key, could not) be opened.
            reaped += await _reap_endpoint(conn, endpoint_from_row(row, None), now)
        reaped += await _reap_runs_alone(conn, now)
    return reaped


async def _reap_endpoint(conn: AsyncConnection, endpoint: Endpoint, now: datetime) -> int:
    running = await conn.execute(
        select(run_queue).where(
            run_queue.c.endpoint_id == endpoint.id,
            IS_RUNNING,
            # Those holding their own lease are reaped by it (`_reap_runs_alone`).
            ~HOLDS_LEASE,
        )
    )
    abandoned = [_expired(run_from_row(row), now) for row in running.mappings().all()]
    for run in abandoned:
        await save_run(conn, run)
    await save_endpoint_state(conn, after_reap(endpoint, abandoned, now))
    return len(abandoned)


def _expired(running: Run, now: datetime) -> Run:
    reason = f"lease of worker {running.worker_id} expired"
    return abandoned_run(running, ErrorKind.LEASE_EXPIRED, reason, now)


async def _reap_runs_alone(conn: AsyncConnection, now: datetime) -> int:
    """Abandon the running runs whose own lease expired (`runs.claiming.run_lease_expired`, served
    by the partial index on `run_queue.lease_until`). Their endpoints moved past their slots
    when they were claimed, and are left as they are."""
    expired = await conn.execute(
        select(run_queue)
        .where(HOLDS_LEASE, run_queue.c.lease_until < now, IS_RUNNING)
        .with_for_update(skip_locked=True)
    )
    abandoned = [_expired(run_from_row(row), now) for row in expired.mappings().all()]
    await move_to_history(conn, abandoned)
    return len(abandoned)
