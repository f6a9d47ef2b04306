"""PostgreSQL's claim in one statement: the queued runs' half (`queued_claims`) and the due
slots' half (`slot_claims`) joined, compiled once, and sent on asyncpg's own connection."""

from __future__ import annotations

import functools
from typing import Any

from sqlalchemy import (
    CompoundSelect,
    bindparam,
    cast,
    func,
    literal,
    literal_column,
    null,
    or_,
    select,
    union_all,
)

from cronpilot.adapters.sql.claim_request import Leased, LeaseRequest, Started, job_holds
from cronpilot.adapters.sql.finish_statement import ROW_VERSION
from cronpilot.adapters.sql.limits_claim import granted_postgres
from cronpilot.adapters.sql.queued_claims import RUN_PREFIX, queued_postgres
from cronpilot.adapters.sql.rows import EMPTY_AS_NULL, job_columns
from cronpilot.adapters.sql.run_rows import run_from_row
from cronpilot.adapters.sql.slot_claims import slots_postgres
from cronpilot.adapters.sql.tables import UtcDateTime, endpoints, jobs, run_queue


async def claim_postgres(driver: Any, lease: LeaseRequest) -> tuple[list[Started], list[Leased]]:
    """One statement claims both kinds (`claim_postgres_statement`), sent on asyncpg's own
    connection (`Database.driver`): the queued runs started, then the slots leased. Its rows
    come back as the driver decodes them (JSON by the codec SQLAlchemy registers, timestamps
    aware UTC), as `endpoint_from_row` reads them from SQLAlchemy, without its per-column
    processing of some hundred columns a claim (decision 0046)."""
    sql, names, fixed = _claim_postgres_sql()
    given = {
        "now": lease.now,
        "due_by": lease.due_by,
        "limit": lease.limit,
        "worker_id": lease.worker_id,
        "until": lease.until,
    }
    values = fixed | given
    started: list[Started] = []
    leased: list[Leased] = []
    for row in await driver.fetch(sql, *(values[name] for name in names)):
        if row[_KIND] == _QUEUED:
            queued = {column.name: row[RUN_PREFIX + column.name] for column in run_queue.c}
            started.append((row, None if row["started_id"] is None else run_from_row(queued)))
        else:
            leased.append((row, row[_SLOT_RUN], row[_SLOT_TRACE]))
    return started, leased


@functools.cache
def _claim_postgres_sql() -> tuple[str, tuple[str, ...], dict[str, Any]]:
    """`claim_postgres_statement` compiled for asyncpg once: its text, the names of its
    parameters in order (`$1`, `$2`…) and the values of those it fixes itself."""
    from sqlalchemy.dialects.postgresql.asyncpg import dialect

    compiled = claim_postgres_statement().compile(dialect=dialect())  # type: ignore[no-untyped-call]
    names = tuple(compiled.positiontup or ())
    fixed = {name: value for name, value in compiled.params.items() if value is not None}
    return compiled.string, names, fixed


_KIND, _QUEUED, _SLOT = "claim_kind", 0, 1
_SLOT_RUN, _SLOT_TRACE = "slot_run_id", "slot_trace_id"


@functools.cache
def claim_postgres_statement() -> CompoundSelect[Any]:
    """Queued runs and due slots claimed in one statement, built once with bound parameters
    `now`, `due_by`, `limit`, `worker_id` and `until` (building its CTEs takes longer than
    PostgreSQL takes to run it):

        WITH <the queued half: waiting, q_due, q_leased, q_started (below)>,
             due AS (SELECT id FROM endpoints WHERE next_run_at <= :due_by
                     AND lease_owner IS NULL AND NOT EXISTS (<its job's pause holds at :now>)
                     AND id NOT IN (SELECT id FROM q_due) ORDER BY next_run_at
                     LIMIT :limit - (SELECT count(*) FROM q_due) FOR UPDATE SKIP LOCKED),
             leased AS (UPDATE endpoints SET lease_owner = :worker, lease_until = :until
                        FROM due WHERE endpoints.id = due.id RETURNING endpoints.*, xmin),
             started AS (INSERT INTO run_queue (...) SELECT ... FROM leased
                         WHERE NOT EXISTS (<the history's run of the slot>)
                         ON CONFLICT ON CONSTRAINT uq_run_queue_endpoint_slot DO NOTHING
                         RETURNING endpoint_id, id, trace_id)
        SELECT 0, q_leased.*, jobs.name, q_started.id ... (the queued runs, earliest due first)
        UNION ALL
        SELECT 1, leased.*, jobs.name, started.id, started.trace_id ... (the slots, earliest
        first)

    Queued runs go first (they were asked for by hand, and are few), of the endpoints whose
    own schedule they may go before (`queued_claims.waiting_runs`); the slots take what is left
    of the limit."""
    # Limits per target (`adapters.sql.limits_claim`): what both halves may take of them.
    granted = granted_postgres(job_holds(endpoints.c.job_id, bindparam("now", type_=UtcDateTime)))
    within = or_(endpoints.c.limit_key.is_(None), endpoints.c.id.in_(select(granted.c.id)))
    queued_leased, queued_started, queued_due = queued_postgres(within)
    leased, started = slots_postgres(queued_due, within)
    run_columns = [RUN_PREFIX + column.name for column in run_queue.c]
    queued_rows = select(
        literal(_QUEUED).label(_KIND),
        *_endpoint_columns(queued_leased),
        *job_columns(),
        *(queued_leased.c[name] for name in run_columns),
        queued_started.c.id.label("started_id"),
        null().label(ROW_VERSION.name),
        null().label(_SLOT_RUN),
        null().label(_SLOT_TRACE),
        queued_leased.c.run_due_at.label("first_at"),
        queued_leased.c.run_slot_at.label("then_at"),
    )
    queued_rows = queued_rows.join(jobs, jobs.c.id == queued_leased.c.job_id).outerjoin(
        queued_started, queued_started.c.id == queued_leased.c.run_id
    )
    slot_rows = (
        select(
            literal(_SLOT),
            *_endpoint_columns(leased),
            *job_columns(),
            *(cast(null(), column.type) for column in run_queue.c),
            null(),
            leased.c[ROW_VERSION.name],
            started.c.id,
            started.c.trace_id,
            leased.c.next_run_at,
            null(),
        )
        .join(jobs, jobs.c.id == leased.c.job_id)
        .outerjoin(started, started.c.endpoint_id == leased.c.id)
    )
    return union_all(queued_rows, slot_rows).order_by(
        literal_column(_KIND), literal_column("first_at"), literal_column("then_at")
    )


def _endpoint_columns(leased: Any) -> list[Any]:
    """The endpoint columns of the `leased` CTE as `endpoint_from_row` reads them, those of
    `EMPTY_AS_NULL` NULL when empty: the driver returns a NULL as None without a call to the
    JSON decoder, which the rows' other JSON columns still get."""
    return [
        func.nullif(
            leased.c[column.name],
            literal_column(f"'{EMPTY_AS_NULL[column.name]}'::jsonb"),
            type_=column.type,
        ).label(column.name)
        if column.name in EMPTY_AS_NULL
        else leased.c[column.name]
        for column in endpoints.c
    ]
