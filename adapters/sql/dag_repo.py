"""DAG runs over SQL: a finished upstream run advances its DAG run in the transaction that records
it (`advance_dag`, called by `adapters.sql.finishes`), and `DagRepository` for the rest.

The job's endpoint rows are locked (in id order, so two transactions never wait on each other
crosswise) while the waits of the DAG run are read and written: two parents of one dependant
finishing at once on two workers are serialised, and exactly one of them starts it.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Select, and_, delete, insert, select
from sqlalchemy.engine import RowMapping
from sqlalchemy.ext.asyncio import AsyncConnection

from cronpilot.adapters.sql.engine import Database
from cronpilot.adapters.sql.notifications_repo import add_notifications
from cronpilot.adapters.sql.rows import (
    approval_values,
    endpoint_from_row,
    run_from_row,
    run_values,
    save_endpoint_state,
    select_endpoints,
)
from cronpilot.adapters.sql.run_places import every_run
from cronpilot.adapters.sql.tables import (
    IS_PENDING_APPROVAL,
    approvals,
    dag_waits,
    endpoints,
    run_queue,
    runs,
)
from cronpilot.domain.graph.dag import (
    DagPlan,
    DagWait,
    ParentOutcome,
    advance,
    changes_matter,
    dag_claim,
    dag_of,
    outcome_of,
    reading,
    ready_trigger,
    run_if_reads,
    starting,
)
from cronpilot.domain.model import Claim, DagTrigger, Endpoint, Finish, Recorded, Run, RunStatus
from cronpilot.domain.ports import DagRepository, SecretCipher
from cronpilot.domain.rules.conditions import Response
from cronpilot.domain.runs.transitions import started_run


async def advance_dag(
    conn: AsyncConnection, cipher: SecretCipher | None, finish: Finish, run: Run
) -> Recorded:
    """Report `run`, just recorded for `finish` on `conn`, to its endpoint's dependants
    (`domain.graph.dag.advance`) and start those now ready, in the same transaction. The caller has
    locked the endpoints of the run's job (`lock_jobs`)."""
    claim, worker_id, now = finish.claim, finish.worker_id, finish.now
    job = await lock_job(conn, cipher, claim.endpoint.job_id)
    endpoint = next(e for e in job if e.id == claim.endpoint.id)
    dag = dag_of(claim.dag, run, endpoint)
    waits = await dag_run_waits(conn, dag[0])
    previous = await _previous_success(conn, run) if changes_matter(endpoint, job) else None
    outcome = outcome_of(run, previous, endpoint)
    responses = await _responses(conn, job, run_if_reads(job, waits, endpoint, run), run)
    gated = await _gated(conn, job)
    plan = advance(
        job,
        waits,
        endpoint,
        outcome,
        dag=dag,
        worker_id=worker_id,
        now=now,
        responses=responses,
        gated=gated,
    )
    started = await _carry_out(conn, cipher, plan, (worker_id, finish.lease_seconds), now)
    return Recorded(run, started, tuple(plan.skips), tuple(plan.approvals))


async def _gated(conn: AsyncConnection, job: Sequence[Endpoint]) -> set[str]:
    """The ids of the job's endpoints with an approval pending; no query for a job with no
    approval gate, the common case."""
    gates = [e.id for e in job if e.spec.approval_timeout_seconds is not None]
    if not gates:
        return set()
    query = select(approvals.c.endpoint_id).where(
        IS_PENDING_APPROVAL, approvals.c.endpoint_id.in_(gates)
    )
    return set((await conn.execute(query)).scalars())


def lock_jobs(job_ids: Collection[str], endpoint_ids: Collection[str]) -> Select[Any]:
    """The statement locking every endpoint of `job_ids` and `endpoint_ids`, in id order as
    every other writer locks endpoints (no deadlock): two parents of one dependant finishing
    at once are serialised."""
    return (
        select(endpoints.c.id)
        .where(endpoints.c.job_id.in_(sorted(job_ids)) | endpoints.c.id.in_(endpoint_ids))
        .order_by(endpoints.c.id)
        .with_for_update()
    )


async def lock_job(
    conn: AsyncConnection, cipher: SecretCipher | None, job_id: str
) -> list[Endpoint]:
    """Every endpoint of the job, row-locked in id order (as `lock_jobs`)."""
    query = (
        select_endpoints()
        .where(endpoints.c.job_id == job_id)
        .order_by(endpoints.c.id)
        .with_for_update(of=endpoints)
    )
    rows = (await conn.execute(query)).mappings().all()
    return [endpoint_from_row(row, cipher) for row in rows]


async def _carry_out(
    conn: AsyncConnection,
    cipher: SecretCipher | None,
    plan: DagPlan,
    lease: tuple[str, float],
    now: datetime,
) -> list[Claim]:
    await save_plan(conn, plan, cipher)
    starts, ready = starting(plan)
    for wait in ready:
        await _save_wait(conn, wait)
    return [await _start(conn, node, trigger, lease, now) for node, trigger in starts]


async def save_plan(conn: AsyncConnection, plan: DagPlan, cipher: SecretCipher | None) -> None:
    """Write what `plan` decided but the starts: waits, skipped runs, approvals asked for and
    their notifications."""
    for wait in plan.finished:
        await conn.execute(delete(dag_waits).where(*_wait_key(wait)))
    for wait in plan.waiting.values():
        await _save_wait(conn, wait)
    if plan.skipped:
        await conn.execute(insert(runs), [run_values(run) for run in plan.skipped])
    if plan.approvals:
        await conn.execute(insert(approvals), [approval_values(a) for a in plan.approvals])
    await add_notifications(conn, plan.notifications, cipher)


async def _start(
    conn: AsyncConnection,
    endpoint: Endpoint,
    trigger: DagTrigger,
    lease: tuple[str, float],
    now: datetime,
) -> Claim:
    """Lease `endpoint` and insert its `running` run, a child of the trigger's parent."""
    parent_ids = list(trigger.parents.values())
    bodies = await conn.execute(
        select(every_run.c.id, every_run.c.body).where(every_run.c.id.in_(parent_ids))
    )
    by_id = {row.id: row.body for row in bodies}
    upstream = {name: by_id[run_id] for name, run_id in trigger.parents.items() if run_id in by_id}
    claim = dag_claim(endpoint, trigger, upstream, lease, now)
    await save_endpoint_state(conn, claim.endpoint)
    await conn.execute(insert(run_queue).values(run_values(started_run(claim, lease[0], now))))
    return claim


class SqlDag(DagRepository):
    def __init__(self, db: Database, cipher: SecretCipher | None) -> None:
        self._db = db
        self._cipher = cipher

    async def claim_ready(
        self, now: datetime, worker_id: str, lease_seconds: float, limit: int
    ) -> list[Claim]:
        if limit <= 0:
            return []
        query = (
            select(dag_waits)
            .join(endpoints, endpoints.c.id == dag_waits.c.endpoint_id)
            .where(dag_waits.c.ready.is_(True), endpoints.c.lease_owner.is_(None))
            .order_by(dag_waits.c.created_at)
            .limit(limit)
        )
        claims = []
        async with self._db.write() as conn:
            for row in (await conn.execute(query)).mappings().all():
                wait = _wait(row)
                locked = await conn.execute(
                    select_endpoints()
                    .where(endpoints.c.id == wait.endpoint_id, endpoints.c.lease_owner.is_(None))
                    .with_for_update(of=endpoints, skip_locked=self._db.dialect == "postgresql")
                )
                found = locked.mappings().one_or_none()
                if found is None:
                    continue
                await conn.execute(delete(dag_waits).where(*_wait_key(wait)))
                endpoint = endpoint_from_row(found, self._cipher)
                trigger = ready_trigger(wait)
                lease = (worker_id, lease_seconds)
                claims.append(await _start(conn, endpoint, trigger, lease, now))
        return claims

    async def add_ready(self, wait: DagWait) -> None:
        async with self._db.write() as conn:
            await _save_wait(conn, wait)

    async def list_waits(self) -> list[DagWait]:
        query = select(dag_waits).order_by(dag_waits.c.dag_run_id, dag_waits.c.endpoint_id)
        async with self._db.read() as conn:
            return [_wait(row) for row in (await conn.execute(query)).mappings().all()]

    async def drop_stale_waits(self, created_before: datetime) -> int:
        held = (
            select(approvals.c.id)
            .where(
                IS_PENDING_APPROVAL,
                approvals.c.dag_run_id == dag_waits.c.dag_run_id,
                approvals.c.endpoint_id == dag_waits.c.endpoint_id,
            )
            .exists()
        )
        async with self._db.write() as conn:
            result = await conn.execute(
                delete(dag_waits).where(dag_waits.c.created_at < created_before, ~held)
            )
        return int(result.rowcount)

    async def trace_neighbours(self, run: Run) -> tuple[Run | None, Run | None]:
        if run.parent_trace_id is None:
            return None, None
        async with self._db.read() as conn:
            parent = (
                (
                    await conn.execute(
                        select(every_run).where(every_run.c.trace_id == run.parent_trace_id)
                    )
                )
                .mappings()
                .first()
            )
            earlier = (
                (
                    await conn.execute(
                        select(every_run)
                        .where(
                            every_run.c.parent_trace_id == run.parent_trace_id,
                            (every_run.c.started_at < run.started_at)
                            | and_(
                                every_run.c.started_at == run.started_at, every_run.c.id < run.id
                            ),
                        )
                        .order_by(every_run.c.started_at.desc(), every_run.c.id.desc())
                        .limit(1)
                    )
                )
                .mappings()
                .first()
            )
        return (
            None if parent is None else run_from_row(parent),
            None if earlier is None else run_from_row(earlier),
        )


async def _previous_success(conn: AsyncConnection, run: Run) -> Run | None:
    query = (
        select(every_run)
        .where(
            every_run.c.endpoint_id == run.endpoint_id,
            every_run.c.slot_at < run.slot_at,
            every_run.c.status == RunStatus.SUCCESS.value,
        )
        .order_by(every_run.c.slot_at.desc())
        .limit(1)
    )
    row = (await conn.execute(query)).mappings().one_or_none()
    return None if row is None else run_from_row(row)


async def _responses(
    conn: AsyncConnection, job: list[Endpoint], reads: dict[str, str | None], run: Run
) -> dict[str, Response]:
    """The responses `run_if_reads` named: `run` itself, the other runs of the DAG run, and the
    latest successful run of a parent not in it."""
    found = {name: reading(run) for name, run_id in reads.items() if run_id == run.id}
    ids = [run_id for run_id in reads.values() if run_id is not None and run_id != run.id]
    if ids:
        stored = {
            row["id"]: run_from_row(row)
            for row in (
                await conn.execute(select(every_run).where(every_run.c.id.in_(ids)))
            ).mappings()
        }
        found |= {n: reading(stored[i]) for n, i in reads.items() if i in stored}
    by_name = {e.name: e for e in job}
    for name in [name for name, run_id in reads.items() if run_id is None and name in by_name]:
        latest = await conn.execute(
            select(every_run)
            .where(
                every_run.c.endpoint_id == by_name[name].id,
                every_run.c.status == RunStatus.SUCCESS.value,
            )
            .order_by(every_run.c.slot_at.desc())
            .limit(1)
        )
        row = latest.mappings().one_or_none()
        if row is not None:
            found[name] = reading(run_from_row(row))
    return found


async def dag_run_waits(conn: AsyncConnection, dag_run_id: str) -> dict[str, DagWait]:
    """The open waits of one DAG run, by endpoint id."""
    query = select(dag_waits).where(dag_waits.c.dag_run_id == dag_run_id)
    rows = (await conn.execute(query)).mappings().all()
    return {row["endpoint_id"]: _wait(row) for row in rows}


def _wait_key(wait: DagWait) -> list[Any]:
    return [
        dag_waits.c.dag_run_id == wait.dag_run_id,
        dag_waits.c.endpoint_id == wait.endpoint_id,
    ]


async def _save_wait(conn: AsyncConnection, wait: DagWait) -> None:
    await conn.execute(delete(dag_waits).where(*_wait_key(wait)))
    await conn.execute(
        insert(dag_waits).values(
            dag_run_id=wait.dag_run_id,
            endpoint_id=wait.endpoint_id,
            root=wait.root,
            arrived={
                name: {
                    "run_id": o.run_id,
                    "trace_id": o.trace_id,
                    "ok": o.ok,
                    "changed": o.changed,
                    "skipped": o.skipped,
                }
                for name, o in wait.arrived.items()
            },
            ready=wait.ready,
            parent_trace_id=wait.parent_trace_id,
            created_at=wait.created_at,
        )
    )


def _wait(row: RowMapping) -> DagWait:
    arrived = {name: ParentOutcome(**data) for name, data in row["arrived"].items()}
    return DagWait(
        dag_run_id=row["dag_run_id"],
        endpoint_id=row["endpoint_id"],
        root=row["root"],
        created_at=row["created_at"],
        arrived=arrived,
        ready=row["ready"],
        parent_trace_id=row["parent_trace_id"],
    )
