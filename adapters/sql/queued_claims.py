"""The claim of queued runs (asked for by hand or by a backfill): which may start, how their
endpoints are leased and the runs turned `running` (PostgreSQL's half of the one claim
statement, SQLite's pick in the domain), and how the leased rows become claims."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    BindParameter,
    ColumnElement,
    Integer,
    Select,
    String,
    and_,
    bindparam,
    func,
    or_,
    select,
    update,
)
from sqlalchemy.ext.asyncio import AsyncConnection

from cronpilot.adapters.crypto import SecretUndecryptable
from cronpilot.adapters.sql.claim_request import LeaseRequest, Started, job_holds
from cronpilot.adapters.sql.claim_undecryptable import fail_undecryptable
from cronpilot.adapters.sql.rows import endpoint_from_row
from cronpilot.adapters.sql.run_rows import run_from_row, run_values
from cronpilot.adapters.sql.sqlite_claim import lease_returning, mappings_of
from cronpilot.adapters.sql.tables import IS_QUEUED, UtcDateTime, endpoints, run_queue
from cronpilot.domain.model import Claim, RunStatus, RunTrigger
from cronpilot.domain.ports import SecretCipher
from cronpilot.domain.runs.claiming import first_of_each
from cronpilot.domain.runs.transitions import queued_claim, started_queued

RUN_PREFIX = "run_"
"""The prefix of a queued run's columns beside its endpoint's in the claim statement's rows."""


def waiting_runs(
    due_by: datetime | BindParameter[Any], now: datetime | BindParameter[Any]
) -> Select[Any]:
    """Queued runs due by `due_by` of unleased endpoints that may go before their endpoint's
    schedule, their job not paused at `now`, earliest first: served by the partial index
    `QUEUED_INDEX`.

    Mirrors `domain.runs.claiming.may_start` in `queue_order` (proven by
    `tests/contract/test_rules_contract.py::test_a_claim_takes_what_the_domain_picks`)."""
    return (
        select(run_queue)
        .join(endpoints, endpoints.c.id == run_queue.c.endpoint_id)
        .where(
            IS_QUEUED,
            run_queue.c.due_at <= due_by,
            endpoints.c.lease_owner.is_(None),
            _ahead_of_schedule(due_by),
            ~job_holds(endpoints.c.job_id, now),
        )
        .order_by(run_queue.c.due_at, run_queue.c.slot_at)
    )


def _ahead_of_schedule(due_by: datetime | BindParameter[Any]) -> ColumnElement[bool]:
    """`domain.runs.requested_runs.ahead_of_schedule` in SQL, on a row of `runs` joined with its
    endpoint (proven with `waiting_runs`)."""
    return or_(
        endpoints.c.next_run_at.is_(None),
        endpoints.c.next_run_at > due_by,
        and_(
            run_queue.c.trigger == RunTrigger.MANUAL.value,
            run_queue.c.due_at < endpoints.c.next_run_at,
        ),
    )


def queued_postgres(within: Any) -> tuple[Any, Any, Any]:
    """The queued half of `claim_statement.claim_postgres_statement`: pick the earliest due
    queued run of each unleased endpoint (that `within` lets go), lock those endpoints
    (skipping rows other claimers hold), lease them and turn their runs `running`; returns the
    leased rows' CTE (with the runs' columns, prefixed `run_`), the started runs' CTE and the
    locked rows' CTE.

        WITH waiting AS (SELECT q.* FROM (SELECT q.*, row_number() OVER (PARTITION BY
                         q.endpoint_id ORDER BY q.due_at, q.slot_at) AS rank
                         FROM run_queue q JOIN endpoints ... WHERE q.status = 'queued'
                         AND q.due_at <= :due_by AND endpoints.lease_owner IS NULL
                         AND NOT EXISTS (<its job's pause holds at :now>)) WHERE rank = 1),
             q_due AS (SELECT endpoints.id, waiting.* (as run_*) FROM endpoints JOIN waiting
                       ... WHERE endpoints.lease_owner IS NULL ORDER BY waiting.due_at LIMIT :n
                       FOR UPDATE OF endpoints SKIP LOCKED),
             q_leased AS (UPDATE endpoints SET lease_owner = :worker, lease_until = :until
                          FROM q_due WHERE endpoints.id = q_due.id RETURNING endpoints.*,
                          q_due.run_*),
             q_started AS (UPDATE run_queue SET status = 'running', started_at = :now,
                           worker_id = :worker FROM q_leased WHERE run_queue.id = q_leased.run_id
                           AND run_queue.status = 'queued' RETURNING run_queue.id)

    A locked endpoint whose row changed since the statement began is checked again (READ
    COMMITTED), and so is the run's `queued` status in `q_started`: two claimers never start
    one run, even when the first has finished it already."""
    worker_id = bindparam("worker_id", type_=String)
    # The earliest of each endpoint (`domain.runs.claiming.first_of_each`, which the SQLite path
    # calls): ranked, as DISTINCT ON is spelt differently across SQLAlchemy versions.
    earliest_first = func.row_number().over(
        partition_by=run_queue.c.endpoint_id, order_by=(run_queue.c.due_at, run_queue.c.slot_at)
    )
    ranked = (
        waiting_runs(bindparam("due_by", type_=UtcDateTime), bindparam("now", type_=UtcDateTime))
        .order_by(None)
        .add_columns(earliest_first.label("rank"))
        .subquery("ranked")
    )
    waiting = (
        select(*(ranked.c[column.name] for column in run_queue.c))
        .where(ranked.c.rank == 1)
        .cte("waiting")
    )
    run_columns = [RUN_PREFIX + column.name for column in run_queue.c]
    due = (
        select(
            endpoints.c.id,
            *(waiting.c[column.name].label(RUN_PREFIX + column.name) for column in run_queue.c),
        )
        .join(waiting, waiting.c.endpoint_id == endpoints.c.id)
        .where(endpoints.c.lease_owner.is_(None), within)
        .order_by(waiting.c.due_at, waiting.c.slot_at)
        .limit(bindparam("limit", type_=Integer))
        .with_for_update(of=endpoints, skip_locked=True)
        .cte("q_due")
    )
    leased = (
        update(endpoints)
        .where(endpoints.c.id == due.c.id)
        .values(lease_owner=worker_id, lease_until=bindparam("until", type_=UtcDateTime))
        .returning(*endpoints.c, *(due.c[name] for name in run_columns))
        .cte("q_leased")
    )
    # Mirrors `domain.runs.claiming.leased` and `domain.runs.transitions.started_queued`, which the
    # SQLite path calls directly (proven as `slot_claims.slots_postgres` is).
    started = (
        update(run_queue)
        .where(run_queue.c.id == leased.c.run_id, run_queue.c.status == RunStatus.QUEUED.value)
        .values(
            status=RunStatus.RUNNING.value,
            started_at=bindparam("now", type_=UtcDateTime),
            worker_id=worker_id,
        )
        .returning(run_queue.c.id)
        .cte("q_started")
    )
    return leased, started, due


async def start_queued_sqlite(
    conn: AsyncConnection, lease: LeaseRequest, within: Any
) -> list[Started]:
    """SQLite's one writer (the transaction began IMMEDIATE) lets the earliest due queued run
    of each unleased endpoint (that `within` lets go) be picked, then their endpoints leased
    and read back in one statement and the runs started in one executemany."""
    query = waiting_runs(lease.due_by, lease.now).where(within)
    waiting = (await conn.execute(query)).mappings()
    picked = first_of_each((run_from_row(row) for row in waiting), lease.limit)
    if not picked:
        return []
    leased = await conn.execute(
        lease_returning(
            endpoints.c.id.in_([queued.endpoint_id for queued in picked]),
            lease.worker_id,
            lease.until,
        )
    )
    rows = {row["id"]: row for row in mappings_of(leased)}
    await conn.execute(
        update(run_queue).where(run_queue.c.id == bindparam("b_id")),
        [
            {"b_id": queued.id, **run_values(started_queued(queued, lease.worker_id, lease.now))}
            for queued in picked
        ],
    )
    return [(rows[queued.endpoint_id], queued) for queued in picked]


async def queued_claims(
    cipher: SecretCipher | None,
    conn: AsyncConnection,
    started: list[Started],
    lease: LeaseRequest,
) -> list[Claim]:
    """The claims of the queued runs started; an endpoint whose run another claimer started
    first is let go, and a run whose endpoint's secrets cannot be opened fails."""
    claims: list[Claim] = []
    for row, queued in started:
        if queued is None:
            # Another claimer started its run (and finished it) since this statement
            # began: the endpoint was leased for nothing.
            await conn.execute(
                update(endpoints)
                .where(endpoints.c.id == row["id"])
                .values(lease_owner=None, lease_until=None)
            )
            continue
        try:
            endpoint = endpoint_from_row(row, cipher)
        except SecretUndecryptable:
            running = started_queued(queued, lease.worker_id, lease.now)
            sealed = endpoint_from_row(row, None)
            await fail_undecryptable(conn, cipher, sealed, running, lease.now)
            continue
        claims.append(queued_claim(endpoint, queued, lease.until))
    return claims
