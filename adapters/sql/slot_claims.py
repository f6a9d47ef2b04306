"""The claim of due endpoints' slots: which rows are due, how they are leased and their
`running` runs inserted (PostgreSQL's half of the one claim statement, SQLite's two
statements), and how the leased rows become claims (catch-up, a slot already run, a secret
that cannot be opened)."""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BindParameter,
    ColumnElement,
    Integer,
    Select,
    String,
    bindparam,
    case,
    cast,
    delete,
    func,
    literal,
    null,
    select,
    update,
)
from sqlalchemy.ext.asyncio import AsyncConnection

from cronpilot.adapters.crypto import SecretUndecryptable
from cronpilot.adapters.sql.claim_request import Leased, LeaseRequest, job_holds
from cronpilot.adapters.sql.claim_undecryptable import fail_undecryptable
from cronpilot.adapters.sql.finish_statement import ROW_VERSION
from cronpilot.adapters.sql.notifications_repo import add_episode
from cronpilot.adapters.sql.rows import endpoint_from_row, save_endpoint_state, save_endpoint_states
from cronpilot.adapters.sql.run_places import history_has_slot, queue_runs
from cronpilot.adapters.sql.run_rows import run_from_row
from cronpilot.adapters.sql.sqlite_claim import (
    SLOT_TAKEN,
    insert_runs,
    lease_returning,
    mappings_of,
)
from cronpilot.adapters.sql.tables import QUEUE_SLOT_KEY, UtcDateTime, endpoints, run_queue
from cronpilot.domain.evolve import evolved
from cronpilot.domain.log_extra import log_extra
from cronpilot.domain.model import (
    Claim,
    Endpoint,
    Overlap,
    Run,
    RunStatus,
    RunTrigger,
    StoredClaim,
    new_id,
)
from cronpilot.domain.ports import SecretCipher
from cronpilot.domain.runs.transitions import (
    after_slot,
    caught_up,
    claim_of,
    runs_alone,
    started_run,
)
from cronpilot.domain.runs.watch import caught_up_missed, caught_up_notifications
from cronpilot.domain.schedule.overlap import claimed_alone

logger = logging.getLogger(__name__)


def claim_candidates(
    due_by: datetime | BindParameter[Any],
    limit: int | ColumnElement[int],
    now: datetime | BindParameter[Any],
) -> Select[Any]:
    """Due, unleased endpoints whose job's pause does not hold at `now`, earliest first: served
    by the partial index `CLAIM_INDEX` (the job is looked up by its key, row by row).

    Mirrors `domain.runs.claiming.is_due` and the slots of `pick_claims` (proven by
    `tests/contract/test_rules_contract.py::test_a_claim_takes_what_the_domain_picks`)."""
    return (
        select(endpoints.c.id)
        .where(
            endpoints.c.next_run_at <= due_by,
            endpoints.c.lease_owner.is_(None),
            ~job_holds(endpoints.c.job_id, now),
        )
        .order_by(endpoints.c.next_run_at)
        .limit(limit)
    )


def _hex_id() -> Any:
    """`new_id()`'s format (uuid4 hex) computed in PostgreSQL, for rows made inside SQL."""
    return func.replace(cast(func.gen_random_uuid(), String), "-", "")


def slots_postgres(queued: Any, within: Any) -> tuple[Any, Any]:
    """The slot half of `claim_statement.claim_postgres_statement`: the CTEs that lock due rows
    (skipping rows other claimers hold, those `queued` leased already, and those `within`
    leaves out), lease them and insert their `running` runs (a slot that already has a run
    inserts nothing: ON CONFLICT); returns the leased rows' CTE and the started runs' CTE."""
    now = bindparam("now", type_=UtcDateTime)
    worker_id = bindparam("worker_id", type_=String)
    # What the queued half leased counts against the limit and is left out here: every CTE of
    # one statement reads the same snapshot, where those rows still look unleased.
    taken = select(func.count()).select_from(queued).scalar_subquery()
    due = claim_candidates(
        bindparam("due_by", type_=UtcDateTime), bindparam("limit", type_=Integer) - taken, now
    ).where(endpoints.c.id.not_in(select(queued.c.id)), within)
    due_cte = due.with_for_update(skip_locked=True).cte("due")
    # Mirrors `domain.runs.claiming.leased`.
    leased = (
        update(endpoints)
        .where(endpoints.c.id == due_cte.c.id)
        .values(lease_owner=worker_id, lease_until=bindparam("until", type_=UtcDateTime))
        .returning(*endpoints.c, ROW_VERSION)
        .cte("leased")
    )
    # Mirrors `domain.runs.transitions.started_run`, which the SQLite path calls directly (proven by
    # `tests/contract/test_rules_contract.py::test_a_claim_takes_what_the_domain_picks`); the
    # slot is the grid slot (`Endpoint.next_slot`), off which jitter may have moved the call.
    slot = func.coalesce(leased.c.next_slot_at, leased.c.next_run_at)
    # `runs.transitions.runs_alone`: a slot of an endpoint under `allow` holds the lease itself.
    own_lease = case(
        (leased.c.overlap == Overlap.ALLOW.value, bindparam("until", type_=UtcDateTime)),
        else_=null(),
    )
    new_runs = select(
        _hex_id(),
        leased.c.id,
        leased.c.job_id,
        _hex_id(),
        literal(RunTrigger.SCHEDULE.value),
        leased.c.next_run_source,
        literal(RunStatus.RUNNING.value),
        slot,
        now,
        worker_id,
        literal(1),
        own_lease,
    ).where(~history_has_slot(leased.c.id, slot))
    # Only PostgreSQL takes this statement, so its insert construct is named (and typed) here.
    from sqlalchemy.dialects.postgresql import insert as pg_insert

    started = (
        pg_insert(run_queue)
        .from_select(
            [
                run_queue.c.id,
                run_queue.c.endpoint_id,
                run_queue.c.job_id,
                run_queue.c.trace_id,
                run_queue.c.trigger,
                run_queue.c.schedule_source,
                run_queue.c.status,
                run_queue.c.slot_at,
                run_queue.c.started_at,
                run_queue.c.worker_id,
                run_queue.c.attempt,
                run_queue.c.lease_until,
            ],
            new_runs,
        )
        .on_conflict_do_nothing(constraint=QUEUE_SLOT_KEY)
        .returning(run_queue.c.endpoint_id, run_queue.c.id, run_queue.c.trace_id)
        .cte("started")
    )
    return leased, started


async def lease_due_sqlite(conn: AsyncConnection, lease: LeaseRequest, within: Any) -> list[Leased]:
    """The slot half of SQLite's claim in two statements (`sqlite_claim`): lease the due rows
    and read them back at once, then insert the runs `started_run` makes of their slots."""
    due = claim_candidates(lease.due_by, lease.limit, lease.now).where(within)
    result = await conn.execute(
        lease_returning(endpoints.c.id.in_(due.scalar_subquery()), lease.worker_id, lease.until)
    )
    # RETURNING comes in no set order: earliest first, as the candidates were picked.
    rows = sorted(mappings_of(result), key=lambda row: row["next_run_at"])
    runs: dict[str, Run] = {}
    for row in rows:
        if not row[SLOT_TAKEN]:
            claim = claim_of(endpoint_from_row(row, None), new_id(), new_id(), lease.until)
            runs[row["id"]] = started_run(claim, lease.worker_id, lease.now)
    inserted = await insert_runs(conn, list(runs.values()))
    leased: list[Leased] = []
    for row in rows:
        run = runs.get(row["id"])
        if run is not None and run.id in inserted:
            leased.append((row, run.id, run.trace_id))
        else:
            leased.append((row, None, None))
    return leased


async def slot_claims(
    conn: AsyncConnection,
    slots: list[Leased],
    lease: LeaseRequest,
    *,
    dialect: str,
    cipher: SecretCipher | None,
    versioned: bool,
) -> list[Claim]:
    """The claims of the leased slots; `versioned` when their rows carry their version
    (`ROW_VERSION`), which a claim keeps if nothing here writes its row again."""
    claims: list[Claim] = []
    let_go: list[Endpoint] = []
    for row, slot_run, slot_trace in slots:
        # Each row is read into an endpoint once, its secrets opened if they can be: the
        # schedule moves on either way, and the run of an endpoint that cannot be called
        # fails below.
        try:
            endpoint, opened = endpoint_from_row(row, cipher), True
        except SecretUndecryptable:
            endpoint, opened = endpoint_from_row(row, None), False
        leased = endpoint
        caught = await _catch_up(
            conn, endpoint, slot_run, slot_trace, lease, dialect=dialect, cipher=cipher
        )
        if caught is None:
            continue
        endpoint, run_id, trace_id = caught
        if run_id is None or trace_id is None:
            await _skip_taken_slot(conn, endpoint, lease.now)
            continue
        if not opened:
            running = await conn.execute(select(run_queue).where(run_queue.c.id == run_id))
            await fail_undecryptable(
                conn, cipher, endpoint, run_from_row(running.mappings().one()), lease.now
            )
            continue
        # Nothing has written the row since the claim statement did when the endpoint is
        # still the one leased: the claim keeps the row's version, built once with it.
        stored = None
        if versioned and endpoint is leased:
            stored = StoredClaim(row[ROW_VERSION.name], lease.now)
        claim = claim_of(endpoint, run_id, trace_id, lease.until, stored)
        if runs_alone(claim):
            # Its run holds the lease (claimed above): the endpoint is let go, planned
            # past the slot, for the next slot's claim, which writes its row again.
            let_go.append(claimed_alone(endpoint, claim.slot_at, lease.now))
            claim = evolved(claim, stored=None)
        claims.append(claim)
    if let_go:
        # One executemany for the batch, after what the loop wrote of the same rows.
        await save_endpoint_states(conn, let_go)
    return claims


async def _catch_up(
    conn: AsyncConnection,
    leased: Endpoint,
    run_id: str | None,
    trace_id: str | None,
    lease: LeaseRequest,
    *,
    dialect: str,
    cipher: SecretCipher | None,
) -> tuple[Endpoint, str | None, str | None] | None:
    """A leased endpoint with the run inserted for its slot (Nones: slot taken), as it is
    when that slot runs; when the slot was missed and its catch-up rule says so
    (`transitions.caught_up`), moved to the slot that runs instead, whose run replaces the
    missed slot's; or, when that slot is not due yet, planned and let go (None)."""
    moved = caught_up(leased, lease.now)
    if moved is None:
        return leased, run_id, trace_id
    assert moved.next_run_at is not None
    missed = caught_up_missed(leased, lease.now)
    if missed is not None:
        told = caught_up_notifications(missed, leased, lease.now)
        await add_episode(conn, dialect, missed, told, cipher)
    due = moved.next_run_at <= lease.due_by
    logger.info(
        "%s missed slot %s; catch_up %s: %s slot %s",
        leased.ref,
        leased.next_slot,
        moved.spec.catch_up,
        "running" if due else "waiting for",
        moved.next_slot,
        extra=log_extra(
            "catch_up",
            endpoint_id=moved.id,
            missed_slot=str(leased.next_slot),
            slot=str(moved.next_slot),
        ),
    )
    if run_id is not None:
        await conn.execute(delete(run_queue).where(run_queue.c.id == run_id))
    if not due:
        await save_endpoint_state(conn, replace(moved, lease_owner=None, lease_until=None))
        return None
    await save_endpoint_state(conn, moved)
    new_run_id, new_trace_id = await _start_run(conn, moved, lease)
    return moved, new_run_id, new_trace_id


async def _start_run(
    conn: AsyncConnection, endpoint: Endpoint, lease: LeaseRequest
) -> tuple[str | None, str | None]:
    """Insert the `running` run of a leased endpoint's next slot; its run id and trace id, or
    Nones when the slot already has a run."""
    claim = claim_of(endpoint, new_id(), new_id(), lease.until)
    run = started_run(claim, lease.worker_id, lease.now)
    if not await queue_runs(conn, [run]):
        return None, None
    return run.id, run.trace_id


async def _skip_taken_slot(conn: AsyncConnection, endpoint: Endpoint, now: datetime) -> None:
    """The slot already has a run: count it as done (without touching the failure streak)
    and plan past it, so the endpoint cannot be claimed for that slot again."""
    assert endpoint.next_slot is not None
    logger.warning(
        "slot already run; re-planning",
        extra=log_extra("claim_skip_slot", endpoint_id=endpoint.id),
    )
    await save_endpoint_state(conn, after_slot(endpoint, endpoint.next_slot, None, now))
