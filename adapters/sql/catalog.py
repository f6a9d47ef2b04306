"""`CatalogRepository` over SQL: declared jobs and endpoints with their schedule state.

The writing methods import `domain.runs.transitions` where they use it: a read command (`endpoints
list`) opens this repository too, and need not load the governor, alerts and planning rules."""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Sequence
from dataclasses import replace
from datetime import datetime

from sqlalchemy import delete, func, insert, or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from cronpilot.adapters.sql.engine import Database
from cronpilot.adapters.sql.limits_claim import limit_statuses, store_limits
from cronpilot.adapters.sql.prefixes import resolve_prefix
from cronpilot.adapters.sql.rows import (
    endpoint_from_row,
    endpoint_values,
    job_from_row,
    job_pause_values,
    job_values,
    lock_endpoint,
    save_endpoint,
    save_endpoint_states,
    select_endpoints,
)
from cronpilot.adapters.sql.tables import IS_QUEUED, endpoints, jobs, run_queue
from cronpilot.domain.errors import EndpointNotFound, JobNotFound
from cronpilot.domain.log_extra import log_extra
from cronpilot.domain.model import (
    Endpoint,
    EndpointSpec,
    IntervalHint,
    Job,
    OneShotHint,
    Pause,
    new_id,
)
from cronpilot.domain.ports import (
    ApplyReport,
    CatalogFigures,
    CatalogRepository,
    JobDeclaration,
    SecretCipher,
)
from cronpilot.domain.schedule.limits import LimitStatus

logger = logging.getLogger(__name__)


class SqlCatalog(CatalogRepository):
    def __init__(self, db: Database, cipher: SecretCipher | None) -> None:
        self._db = db
        self._cipher = cipher

    async def apply(self, declarations: Sequence[JobDeclaration], now: datetime) -> ApplyReport:
        report = ApplyReport()
        async with self._db.write() as conn:
            for declaration in declarations:
                job = await self._apply_job(conn, declaration.job, report)
                for spec in declaration.endpoints:
                    await self._apply_endpoint(conn, job, spec, now, report)
                report.absent.extend(await _undeclared(conn, job, declaration.endpoints))
            await store_limits(conn, [limit for d in declarations for limit in d.limits])
        logger.info(
            "applied declarations",
            extra=log_extra(
                "apply",
                created_count=len(report.created),
                updated_count=len(report.updated),
                absent_count=len(report.absent),
            ),
        )
        return report

    async def limits(self) -> list[LimitStatus]:
        async with self._db.read() as conn:
            return await limit_statuses(conn)

    async def _apply_job(self, conn: AsyncConnection, declared: Job, report: ApplyReport) -> Job:
        row = (
            (await conn.execute(select(jobs).where(jobs.c.name == declared.name)))
            .mappings()
            .one_or_none()
        )
        if row is None:
            await conn.execute(insert(jobs).values(job_values(declared)))
            report.created.append(declared.name)
            return declared
        stored = job_from_row(row)
        if stored.declared == declared.declared:
            report.unchanged.append(declared.name)
            return stored
        updated = replace(declared, id=stored.id, pause=stored.pause)
        await conn.execute(update(jobs).where(jobs.c.id == stored.id).values(job_values(updated)))
        report.updated.append(declared.name)
        return updated

    async def _apply_endpoint(
        self,
        conn: AsyncConnection,
        job: Job,
        spec: EndpointSpec,
        now: datetime,
        report: ApplyReport,
    ) -> None:
        from cronpilot.domain.runs import transitions

        ref = f"{job.name}/{spec.name}"
        query = (
            select_endpoints()
            .where(endpoints.c.job_id == job.id, endpoints.c.name == spec.name)
            .with_for_update(of=endpoints)
        )
        row = (await conn.execute(query)).mappings().one_or_none()
        if row is None:
            created = transitions.replanned(Endpoint(new_id(), job.id, job.name, spec), now)
            await conn.execute(insert(endpoints).values(endpoint_values(created, self._cipher)))
            report.created.append(ref)
            return
        stored = endpoint_from_row(row, self._cipher)
        if stored.spec == spec:
            report.unchanged.append(ref)
            return
        await save_endpoint(conn, transitions.with_spec(stored, spec, now), self._cipher)
        report.updated.append(ref)

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

    async def set_pause(self, endpoint_id: str, pause: Pause | None, now: datetime) -> Endpoint:
        from cronpilot.domain.runs import transitions

        return await self._change(endpoint_id, lambda e: transitions.with_pause(e, pause, now))

    async def set_hints(
        self,
        endpoint_id: str,
        interval_hint: IntervalHint | None,
        oneshot_hint: OneShotHint | None,
        now: datetime,
    ) -> Endpoint:
        from cronpilot.domain.runs import transitions

        return await self._change(
            endpoint_id, lambda e: transitions.with_hints(e, interval_hint, oneshot_hint, now)
        )

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

    async def _change(self, endpoint_id: str, change: Callable[[Endpoint], Endpoint]) -> Endpoint:
        async with self._db.write() as conn:
            stored = await lock_endpoint(conn, endpoint_id, self._cipher)
            if stored is None:
                raise EndpointNotFound(endpoint_id)
            changed = change(stored)
            await save_endpoint(conn, changed, self._cipher)
        return changed


async def _undeclared(
    conn: AsyncConnection, job: Job, declared: Sequence[EndpointSpec]
) -> list[str]:
    """Refs of the job's stored endpoints that `declared` does not name, by name (sorted here,
    not by the database's collation, so that every store agrees)."""
    query = select(endpoints.c.name).where(
        endpoints.c.job_id == job.id, endpoints.c.name.not_in([s.name for s in declared])
    )
    names = (await conn.execute(query)).scalars()
    return [f"{job.name}/{name}" for name in sorted(names)]
