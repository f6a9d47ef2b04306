"""`CatalogRepository` over SQL: declared jobs and endpoints with their schedule state. An
apply and a schedule change are decided in the domain (`domain.declaring`,
`domain.runs.transitions`) and written here as they were decided.

A job's resume re-plans its endpoints here, importing `domain.runs.transitions` where it does:
a read command (`endpoints list`) opens this repository too, and need not load the governor,
alerts and planning rules."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime

from sqlalchemy import delete, func, insert, or_, select, update

from cronpilot.adapters.sql.engine import Database
from cronpilot.adapters.sql.limits_claim import limit_statuses, store_limits
from cronpilot.adapters.sql.prefixes import resolve_prefix
from cronpilot.adapters.sql.rows import (
    endpoint_from_row,
    endpoint_values,
    job_from_row,
    job_pause_values,
    job_values,
    save_endpoint,
    save_endpoint_states,
    select_endpoints,
    state_values,
)
from cronpilot.adapters.sql.tables import IS_QUEUED, endpoints, jobs, run_queue
from cronpilot.domain.errors import EndpointNotFound, JobNotFound
from cronpilot.domain.model import (
    Endpoint,
    Job,
    Pause,
)
from cronpilot.domain.ports import (
    Applied,
    CatalogFigures,
    CatalogRepository,
    SecretCipher,
    StoredJob,
)
from cronpilot.domain.schedule.limits import LimitStatus


class SqlCatalog(CatalogRepository):
    def __init__(self, db: Database, cipher: SecretCipher | None) -> None:
        self._db = db
        self._cipher = cipher

    async def declared_jobs(self, names: Collection[str]) -> list[StoredJob]:
        held = (
            select_endpoints()
            .where(jobs.c.name.in_(list(names)))
            .order_by(endpoints.c.name)
            .with_for_update(of=endpoints)
        )
        async with self._db.read() as conn:
            rows = (await conn.execute(select(jobs).where(jobs.c.name.in_(list(names))))).mappings()
            found = [job_from_row(row) for row in rows]
            held_rows = (await conn.execute(held)).mappings().all()
        owned = [endpoint_from_row(row, self._cipher) for row in held_rows]
        return [StoredJob(job, [e for e in owned if e.job_id == job.id]) for job in found]

    async def save_applied(self, applied: Applied) -> None:
        async with self._db.write() as conn:
            if applied.new_jobs:
                await conn.execute(insert(jobs), [job_values(job) for job in applied.new_jobs])
            for job in applied.changed_jobs:
                await conn.execute(update(jobs).where(jobs.c.id == job.id).values(job_values(job)))
            if applied.new_endpoints:
                await conn.execute(
                    insert(endpoints),
                    [endpoint_values(e, self._cipher) for e in applied.new_endpoints],
                )
            for endpoint in applied.changed_endpoints:
                await save_endpoint(conn, endpoint, self._cipher)
            await store_limits(conn, applied.limits)

    async def limits(self) -> list[LimitStatus]:
        async with self._db.read() as conn:
            return await limit_statuses(conn)

    async def list_jobs(self) -> list[Job]:
        async with self._db.read() as conn:
            result = await conn.execute(select(jobs).order_by(jobs.c.name))
            return [job_from_row(row) for row in result.mappings()]

    async def figures(self, now: datetime) -> CatalogFigures:
        # Mirrors `domain.runs.claiming.is_due` and `hint_active` (the contract suite holds the
        # stores to the same counts).
        count = func.count()
        due = select(count).where(endpoints.c.next_run_at <= now, endpoints.c.lease_owner.is_(None))
        queued = select(count).select_from(run_queue).where(IS_QUEUED, run_queue.c.due_at <= now)
        hinted = select(count).where(
            or_(
                endpoints.c.hint_interval_expires_at > now,
                endpoints.c.hint_oneshot_expires_at > now,
            )
        )
        query = select(due.scalar_subquery(), queued.scalar_subquery(), hinted.scalar_subquery())
        async with self._db.read() as conn:
            row = (await conn.execute(query)).one()
        return CatalogFigures(due=row[0], queued_due=row[1], hints_active=row[2])

    async def get_job(self, name: str) -> Job:
        async with self._db.read() as conn:
            result = await conn.execute(select(jobs).where(jobs.c.name == name))
            row = result.mappings().one_or_none()
        if row is None:
            raise JobNotFound(name)
        return job_from_row(row)

    async def set_job_pause(self, name: str, pause: Pause | None, now: datetime) -> Job:
        from cronpilot.domain.runs import transitions

        async with self._db.write() as conn:
            if pause is None:
                held = select_endpoints().where(jobs.c.name == name).with_for_update(of=endpoints)
                # Only the schedule state is saved: the secrets may stay sealed.
                rows = (await conn.execute(held)).mappings().all()
                stored = [endpoint_from_row(row, None) for row in rows]
                resumed = [transitions.job_resumed(e, now) for e in stored]
                changed = [new for new, old in zip(resumed, stored, strict=True) if new is not old]
                if changed:
                    await save_endpoint_states(conn, changed)
            result = await conn.execute(
                update(jobs)
                .where(jobs.c.name == name)
                .values(job_pause_values(pause))
                .returning(*jobs.c)
            )
            row = result.mappings().one_or_none()
        if row is None:
            raise JobNotFound(name)
        return job_from_row(row)

    async def list_endpoints(self, job_name: str | None = None) -> list[Endpoint]:
        query = select_endpoints().order_by(jobs.c.name, endpoints.c.name)
        if job_name is not None:
            query = query.where(jobs.c.name == job_name)
        async with self._db.read() as conn:
            result = await conn.execute(query)
            return [endpoint_from_row(row, self._cipher) for row in result.mappings()]

    async def get_endpoint(self, ref: str, *, for_update: bool = False) -> Endpoint:
        job_name, slash, name = ref.partition("/")
        if slash:
            query = select_endpoints().where(jobs.c.name == job_name, endpoints.c.name == name)
        else:
            query = select_endpoints().where(endpoints.c.id == ref)
        if for_update:
            query = query.with_for_update(of=endpoints)
        async with self._db.read() as conn:
            row = (await conn.execute(query)).mappings().one_or_none()
            found = None
            if row is None and not slash:
                found = await resolve_prefix(conn, endpoints.c.id, "endpoint", ref)
        if found is not None:
            return await self.get_endpoint(found, for_update=for_update)
        if row is None:
            raise EndpointNotFound(ref)
        return endpoint_from_row(row, self._cipher)

    async def save_schedule(self, endpoint: Endpoint) -> None:
        async with self._db.write() as conn:
            result = await conn.execute(
                update(endpoints)
                .where(endpoints.c.id == endpoint.id)
                .values(state_values(endpoint))
            )
        if result.rowcount == 0:
            raise EndpointNotFound(endpoint.id)

    async def set_volatile_fields(self, endpoint_id: str, fields: Sequence[str]) -> None:
        async with self._db.write() as conn:
            result = await conn.execute(
                update(endpoints)
                .where(endpoints.c.id == endpoint_id)
                .values(volatile_fields=list(fields))
            )
        if result.rowcount == 0:
            raise EndpointNotFound(endpoint_id)

    async def delete_endpoints(self, endpoint_ids: Collection[str]) -> None:
        # The foreign keys cascade to runs, proposals, sessions, schemas, waits, notifications.
        if endpoint_ids:
            async with self._db.write() as conn:
                await conn.execute(delete(endpoints).where(endpoints.c.id.in_(list(endpoint_ids))))

    async def delete_job(self, name: str) -> None:
        async with self._db.write() as conn:
            result = await conn.execute(delete(jobs).where(jobs.c.name == name))
        if result.rowcount == 0:
            raise JobNotFound(name)
