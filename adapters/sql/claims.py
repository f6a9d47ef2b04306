"""`ClaimRepository` over SQL: the claim, the fenced finish, release, abandon and the reaper.

This is the SQL that matters, written once. Every state change goes through
`domain.runs.transitions`, so these rows end up exactly as the in-memory store's entities would.
`now` always comes from the caller: no statement here asks the database for the time.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    BindParameter,
    ColumnElement,
    CompoundSelect,
    Integer,
    Select,
    String,
    and_,
    bindparam,
    case,
    cast,
    delete,
    func,
    literal,
    literal_column,
    null,
    or_,
    select,
    union_all,
    update,
)
from sqlalchemy.ext.asyncio import AsyncConnection

from cronpilot.adapters.crypto import SecretUndecryptable
from cronpilot.adapters.sql.engine import Database
from cronpilot.adapters.sql.finish_statement import ROW_VERSION
from cronpilot.adapters.sql.finishes import finish_many
from cronpilot.adapters.sql.limits_claim import after_hold, allowed_sqlite, granted_postgres
from cronpilot.adapters.sql.notifications_repo import add_episode, add_notifications
from cronpilot.adapters.sql.rows import (
    endpoint_from_row,
    job_columns,
    lock_endpoint,
    run_from_row,
    run_values,
    save_endpoint,
    save_endpoint_state,
    save_endpoint_states,
    select_endpoints,
)
from cronpilot.adapters.sql.run_places import (
    history_has_slot,
    move_to_history,
    queue_runs,
    save_run,
)
from cronpilot.adapters.sql.sqlite_claim import (
    SLOT_TAKEN,
    insert_runs,
    lease_returning,
    mappings_of,
)
from cronpilot.adapters.sql.tables import (
    HOLDS_LEASE,
    IS_QUEUED,
    IS_RUNNING,
    QUEUE_SLOT_KEY,
    UtcDateTime,
    endpoints,
    jobs,
    limits,
    run_queue,
)
from cronpilot.domain.alerts.alerts import run_notifications
from cronpilot.domain.errors import CronpilotError, LeaseLost
from cronpilot.domain.evolve import evolved
from cronpilot.domain.log_extra import log_extra
from cronpilot.domain.model import (
    BodyAbsence,
    Claim,
    Endpoint,
    ErrorKind,
    Finish,
    Overlap,
    Recorded,
    Response,
    Run,
    RunStatus,
    RunTrigger,
    StoredClaim,
    new_id,
)
from cronpilot.domain.ports import ClaimRepository, SecretCipher
from cronpilot.domain.runs.cancelling import cancelled_run
from cronpilot.domain.runs.claiming import first_of_each
from cronpilot.domain.runs.transitions import (
    abandoned_run,
    after_reap,
    after_run,
    after_slot,
    caught_up,
    claim_of,
    finished_run,
    queued_claim,
    runs_alone,
    started_queued,
    started_run,
)
from cronpilot.domain.runs.watch import caught_up_missed, caught_up_notifications
from cronpilot.domain.schedule.overlap import claimed_alone, given_back

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
            ~_job_holds(endpoints.c.job_id, now),
        )
        .order_by(endpoints.c.next_run_at)
        .limit(limit)
    )


def _job_holds(job_id: ColumnElement[str], now: datetime | BindParameter[Any]) -> Any:
    """`domain.schedule.pauses.job_holds` in SQL: the job `job_id` is paused at `now` (proven with
    `claim_candidates`)."""
    return (
        select(jobs.c.id)
        .where(
            jobs.c.id == job_id,
            jobs.c.pause_reason.isnot(None),
            or_(jobs.c.pause_until.is_(None), jobs.c.pause_until > now),
        )
        .exists()
    )


def _held_until(at: ColumnElement[datetime]) -> ColumnElement[datetime | None]:
    """`domain.schedule.pauses.held_until` in SQL, on a row of `endpoints` joined with its job:
    `at`, or the end of the job's pause when later, or NULL while the job is paused until
    resumed."""
    return case(
        (jobs.c.pause_reason.is_(None), at),
        (jobs.c.pause_until.is_(None), null()),
        (jobs.c.pause_until > at, jobs.c.pause_until),
        else_=at,
    )


def _hex_id() -> Any:
    """`new_id()`'s format (uuid4 hex) computed in PostgreSQL, for rows made inside SQL."""
    return func.replace(cast(func.gen_random_uuid(), String), "-", "")


def _slots_postgres(queued: Any, within: Any) -> tuple[Any, Any]:
    """The slot half of `_claim_postgres_statement`: the CTEs that lock due rows (skipping
    rows other claimers hold, those `queued` leased already, and those `within` leaves out),
    lease them and insert their `running` runs (a slot that already has a run inserts nothing:
    ON CONFLICT); returns the leased rows' CTE and the started runs' CTE."""
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


async def _lease_due_sqlite(
    conn: AsyncConnection, lease: LeaseRequest, within: Any
) -> list[Leased]:
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


Started = tuple[Mapping[str, Any], Run | None]
"""An endpoint leased for a queued run, with that run as it was queued, before this claim
turned it `running` (None: another claimer started it first)."""

_RUN_PREFIX = "run_"


def _waiting_runs(
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
            ~_job_holds(endpoints.c.job_id, now),
        )
        .order_by(run_queue.c.due_at, run_queue.c.slot_at)
    )


def _ahead_of_schedule(due_by: datetime | BindParameter[Any]) -> ColumnElement[bool]:
    """`domain.runs.requested_runs.ahead_of_schedule` in SQL, on a row of `runs` joined with its
    endpoint (proven with `_waiting_runs`)."""
    return or_(
        endpoints.c.next_run_at.is_(None),
        endpoints.c.next_run_at > due_by,
        and_(
            run_queue.c.trigger == RunTrigger.MANUAL.value,
            run_queue.c.due_at < endpoints.c.next_run_at,
        ),
    )


async def _claim_postgres(driver: Any, lease: LeaseRequest) -> tuple[list[Started], list[Leased]]:
    """One statement claims both kinds (`_claim_postgres_statement`), sent on asyncpg's own
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
            queued = {column.name: row[_RUN_PREFIX + column.name] for column in run_queue.c}
            started.append((row, None if row["started_id"] is None else run_from_row(queued)))
        else:
            leased.append((row, row[_SLOT_RUN], row[_SLOT_TRACE]))
    return started, leased


@functools.cache
def _claim_postgres_sql() -> tuple[str, tuple[str, ...], dict[str, Any]]:
    """`_claim_postgres_statement` compiled for asyncpg once: its text, the names of its
    parameters in order (`$1`, `$2`…) and the values of those it fixes itself."""
    from sqlalchemy.dialects.postgresql.asyncpg import dialect

    compiled = _claim_postgres_statement().compile(dialect=dialect())  # type: ignore[no-untyped-call]
    names = tuple(compiled.positiontup or ())
    fixed = {name: value for name, value in compiled.params.items() if value is not None}
    return compiled.string, names, fixed


_KIND, _QUEUED, _SLOT = "claim_kind", 0, 1
_SLOT_RUN, _SLOT_TRACE = "slot_run_id", "slot_trace_id"


@functools.cache
def _claim_postgres_statement() -> CompoundSelect[Any]:
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
    own schedule they may go before (`_ahead_of_schedule`); the slots take what is left of the
    limit."""
    # Limits per target (`adapters.sql.limits_claim`): what both halves may take of them.
    granted = granted_postgres(_job_holds(endpoints.c.job_id, bindparam("now", type_=UtcDateTime)))
    within = or_(endpoints.c.limit_key.is_(None), endpoints.c.id.in_(select(granted.c.id)))
    queued_leased, queued_started, queued_due = _queued_postgres(within)
    leased, started = _slots_postgres(queued_due, within)
    run_columns = [_RUN_PREFIX + column.name for column in run_queue.c]
    queued_rows = select(
        literal(_QUEUED).label(_KIND),
        *(queued_leased.c[column.name] for column in endpoints.c),
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
            *(leased.c[column.name] for column in endpoints.c),
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


def _queued_postgres(within: Any) -> tuple[Any, Any, Any]:
    """The queued half of `_claim_postgres_statement`: pick the earliest due queued run of each
    unleased endpoint (that `within` lets go), lock those endpoints (skipping rows other
    claimers hold), lease them and turn their runs `running`; returns the leased rows' CTE
    (with the runs' columns, prefixed `run_`), the started runs' CTE and the locked rows' CTE.

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
        _waiting_runs(bindparam("due_by", type_=UtcDateTime), bindparam("now", type_=UtcDateTime))
        .order_by(None)
        .add_columns(earliest_first.label("rank"))
        .subquery("ranked")
    )
    waiting = (
        select(*(ranked.c[column.name] for column in run_queue.c))
        .where(ranked.c.rank == 1)
        .cte("waiting")
    )
    run_columns = [_RUN_PREFIX + column.name for column in run_queue.c]
    due = (
        select(
            endpoints.c.id,
            *(waiting.c[column.name].label(_RUN_PREFIX + column.name) for column in run_queue.c),
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
    # SQLite path calls directly (proven as `started_run` is, above).
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


async def _start_queued_sqlite(
    conn: AsyncConnection, lease: LeaseRequest, within: Any
) -> list[Started]:
    """SQLite's one writer (the transaction began IMMEDIATE) lets the earliest due queued run
    of each unleased endpoint (that `within` lets go) be picked, then their endpoints leased
    and read back in one statement and the runs started in one executemany."""
    query = _waiting_runs(lease.due_by, lease.now).where(within)
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
                # endpoints whose own schedule they may go before (`_ahead_of_schedule`).
                started, slots = await _claim_postgres(driver, lease)
                claims = await self._queued_claims(conn, started, lease)
                return claims + await self._slot_claims(conn, slots, lease, versioned=True)
        async with self._db.write() as conn:
            holds = _job_holds(endpoints.c.job_id, now)
            within = await allowed_sqlite(conn, horizon, now, limit, holds)
            started = await _start_queued_sqlite(conn, lease, within)
            claims = await self._queued_claims(conn, started, lease)
            rest = replace(lease, limit=limit - len(claims))
            slots = await _lease_due_sqlite(conn, rest, within) if rest.limit > 0 else []
            return claims + await self._slot_claims(conn, slots, rest, versioned=False)

    async def _slot_claims(
        self, conn: AsyncConnection, slots: list[Leased], lease: LeaseRequest, *, versioned: bool
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
                endpoint, opened = endpoint_from_row(row, self._cipher), True
            except SecretUndecryptable:
                endpoint, opened = endpoint_from_row(row, None), False
            leased = endpoint
            caught = await self._catch_up(conn, endpoint, slot_run, slot_trace, lease)
            if caught is None:
                continue
            endpoint, run_id, trace_id = caught
            if run_id is None or trace_id is None:
                await self._skip_taken_slot(conn, endpoint, lease.now)
                continue
            if not opened:
                running = await conn.execute(select(run_queue).where(run_queue.c.id == run_id))
                await self._fail_undecryptable(
                    conn, endpoint, run_from_row(running.mappings().one()), lease.now
                )
                continue
            claim = claim_of(endpoint, run_id, trace_id, lease.until)
            if runs_alone(claim):
                # Its run holds the lease (claimed above): the endpoint is let go, planned
                # past the slot, for the next slot's claim.
                let_go.append(claimed_alone(endpoint, claim.slot_at, lease.now))
            elif versioned and endpoint is leased:
                # Nothing has written the row since the claim statement did.
                claim = evolved(claim, stored=StoredClaim(row[ROW_VERSION.name], lease.now))
            claims.append(claim)
        if let_go:
            # One executemany for the batch, after what the loop wrote of the same rows.
            await save_endpoint_states(conn, let_go)
        return claims

    async def _catch_up(
        self,
        conn: AsyncConnection,
        leased: Endpoint,
        run_id: str | None,
        trace_id: str | None,
        lease: LeaseRequest,
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
            await add_episode(conn, self._db.dialect, missed, told, self._cipher)
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

    async def _queued_claims(
        self, conn: AsyncConnection, started: list[Started], lease: LeaseRequest
    ) -> list[Claim]:
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
                endpoint = endpoint_from_row(row, self._cipher)
            except SecretUndecryptable:
                running = started_queued(queued, lease.worker_id, lease.now)
                sealed = endpoint_from_row(row, None)
                await self._fail_undecryptable(conn, sealed, running, lease.now)
                continue
            claims.append(queued_claim(endpoint, queued, lease.until))
        return claims

    async def _skip_taken_slot(
        self, conn: AsyncConnection, endpoint: Endpoint, now: datetime
    ) -> None:
        """The slot already has a run: count it as done (without touching the failure streak)
        and plan past it, so the endpoint cannot be claimed for that slot again."""
        assert endpoint.next_slot is not None
        logger.warning(
            "slot already run; re-planning",
            extra=log_extra("claim_skip_slot", endpoint_id=endpoint.id),
        )
        await save_endpoint_state(conn, after_slot(endpoint, endpoint.next_slot, None, now))

    async def _fail_undecryptable(
        self, conn: AsyncConnection, sealed: Endpoint, running: Run, now: datetime
    ) -> None:
        """A secret header of this endpoint cannot be opened with our key, so it cannot be
        called: its run fails at once with the reason, and the endpoint is planned past the slot
        (backing off like any failure; a queued run only frees it) while the rest of the batch
        goes ahead. `sealed` keeps
        its headers as stored, and only its schedule state is saved, so the secrets survive."""
        logger.error(
            "cannot open a secret header of %s; run failed",
            sealed.ref,
            extra=log_extra("claim_undecryptable", endpoint_id=sealed.id, run_id=running.id),
        )
        failure = Response(
            status_code=None,
            body_absence=BodyAbsence.NO_RESPONSE,
            error_kind=ErrorKind.INTERNAL,
            error_message=UNDECRYPTABLE_MESSAGE,
            started_at=now,
            finished_at=now,
        )
        run = finished_run(running, failure, now)
        await self._save_run(conn, run)
        ended = after_run(sealed, running, False, now)
        await save_endpoint_state(conn, ended)
        await add_notifications(conn, run_notifications(sealed, ended, run, now), self._cipher)

    async def extend_lease(self, claim: Claim, worker_id: str, until: datetime) -> None:
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
        async with self._db.write() as conn:
            result = await conn.execute(extended)
            if result.rowcount == 0:
                raise LeaseLost(claim.endpoint.id, worker_id)

    async def _fenced(
        self, conn: AsyncConnection, claim: Claim, worker_id: str
    ) -> tuple[Endpoint, Run] | None:
        """The endpoint (locked) and its running run, if this claim still holds the lease.

        The lease owner alone is not enough: after a reap the same worker may hold a newer
        lease on the endpoint, so the claim's own run must still be `running` too. A run that
        holds its own lease (`runs_alone`) needs only that."""
        endpoint = await lock_endpoint(conn, claim.endpoint.id, self._cipher)
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

    async def _save_run(self, conn: AsyncConnection, run: Run) -> None:
        await save_run(conn, run)

    async def finish_many(self, finishes: Sequence[Finish]) -> list[Recorded | CronpilotError]:
        # One transaction for the batch (`adapters.sql.finishes`); each is still fenced on its
        # own lease and run.
        return await finish_many(self._db, self._cipher, finishes)

    async def release(self, claim: Claim, worker_id: str) -> None:
        async with self._db.write() as conn:
            fenced = await self._fenced(conn, claim, worker_id)
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
                await self._save_run(conn, claim.queued)
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
            if not runs_alone(claim):
                await save_endpoint(conn, after_run(endpoint, running, None, now), self._cipher)

    async def cancel(self, claim: Claim, worker_id: str, now: datetime) -> None:
        async with self._db.write() as conn:
            fenced = await self._fenced(conn, claim, worker_id)
            if fenced is None:
                return
            endpoint, running = fenced
            await self._save_run(conn, cancelled_run(running, now))
            if not runs_alone(claim):
                await save_endpoint(conn, after_run(endpoint, running, None, now), self._cipher)

    async def cancels_asked(self, run_ids: Collection[str]) -> set[str]:
        if not run_ids:
            return set()
        query = select(run_queue.c.id).where(
            run_queue.c.id.in_(list(run_ids)), run_queue.c.cancel_requested_by.isnot(None)
        )
        async with self._db.read() as conn:
            return set((await conn.execute(query)).scalars())

    async def reap(self, now: datetime) -> int:
        reaped = 0
        async with self._db.write() as conn:
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
                reaped += await self._reap_endpoint(conn, endpoint_from_row(row, None), now)
            reaped += await _reap_runs_alone(conn, now)
        return reaped

    async def _reap_endpoint(self, conn: AsyncConnection, endpoint: Endpoint, now: datetime) -> int:
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
            await self._save_run(conn, run)
        await save_endpoint_state(conn, after_reap(endpoint, abandoned, now))
        return len(abandoned)

    async def next_due_at(self) -> datetime | None:
        # Mirrors `domain.runs.claiming.next_due` (proven by
        # `tests/contract/test_rules_contract.py:: test_a_claim_takes_what_the_domain_picks`).
        slot = (
            select(func.min(_held_until(after_hold(endpoints.c.next_run_at))))
            .join(jobs, jobs.c.id == endpoints.c.job_id)
            .outerjoin(limits, limits.c.key == endpoints.c.limit_key)
            .where(endpoints.c.lease_owner.is_(None))
        )
        queued = (
            select(func.min(_held_until(after_hold(run_queue.c.due_at))))
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
