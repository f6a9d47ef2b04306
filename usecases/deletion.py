"""Deleting a job or an endpoint, with everything recorded of it."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from cronpilot.domain.access.audit import audit_entry
from cronpilot.domain.errors import (
    EndpointNotFound,
    JobNotFound,
    PreconditionFailed,
    StillDependedOn,
)
from cronpilot.domain.log_extra import log_extra
from cronpilot.domain.model import Job
from cronpilot.domain.ports import Repositories, UnitOfWorkFactory
from cronpilot.domain.versions import endpoint_version

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Deleted:
    job: str | None
    """The job's name when a whole job went."""
    endpoints: list[str]
    """The `job/endpoint` refs deleted."""


async def delete(
    uow: UnitOfWorkFactory,
    ref: str,
    actor: str,
    now: datetime,
    if_version: str | None = None,
    *,
    job_only: bool = False,
    dry_run: bool = False,
) -> Deleted:
    """Delete a job (`ref` its name) with its endpoints, or one endpoint (`job/endpoint` or
    its id), in one unit of work. With the endpoint go its runs (queued and running ones
    too: a worker's finish for one is refused as a lost lease), proposals, analysis sessions,
    output schema and drift, DAG waits, notifications and its graph edges. The audit log keeps
    who deleted what (`actor`), in the same unit.

    Raises `JobNotFound`/`EndpointNotFound`; `StillDependedOn` (nothing deleted) for an endpoint
    that others of its job list in `depends_on`; `PreconditionFailed` when `if_version` is
    given and is not the endpoint's version (`domain.versions`). With `job_only`, `ref` names a
    job and nothing else (`JobNotFound` otherwise): an id prefix never stands for a job. With
    `dry_run`, every check is made and what would go is returned, but nothing is deleted (the
    unit is left uncommitted)."""
    async with uow() as tx:
        job = None if "/" in ref else await _job_named(tx, ref)
        if job is None and job_only:
            raise JobNotFound(ref)
        if job is not None:
            endpoints = await tx.catalog.list_endpoints(job.name)
            await tx.catalog.delete_job(job.name)
            await tx.graph.forget([job.name, *(e.ref for e in endpoints)])
            detail = f"job with {len(endpoints)} endpoint(s)"
            await tx.access.record(audit_entry(actor, "delete", job.name, detail, now))
            if not dry_run:
                await tx.commit()
                log.info("deleted job %s", job.name, extra=log_extra("delete", job=job.name))
            return Deleted(job.name, [e.ref for e in endpoints])
        try:
            endpoint = await tx.catalog.get_endpoint(ref, for_update=True)
        except EndpointNotFound:
            raise (EndpointNotFound(ref) if "/" in ref else JobNotFound(ref)) from None
        if if_version is not None and if_version != endpoint_version(endpoint):
            raise PreconditionFailed(endpoint.ref)
        siblings = await tx.catalog.list_endpoints(endpoint.job_name)
        dependants = [e.ref for e in siblings if endpoint.name in e.spec.depends_on]
        if dependants:
            raise StillDependedOn(endpoint.ref, dependants)
        await tx.catalog.delete_endpoints([endpoint.id])
        await tx.graph.forget([endpoint.ref])
        await tx.access.record(audit_entry(actor, "delete", endpoint.ref, "endpoint", now))
        if dry_run:
            return Deleted(None, [endpoint.ref])
        await tx.commit()
    log.info(
        "deleted endpoint %s", endpoint.ref, extra=log_extra("delete", endpoint_id=endpoint.id)
    )
    return Deleted(None, [endpoint.ref])


async def _job_named(tx: Repositories, name: str) -> Job | None:
    try:
        return await tx.catalog.get_job(name)
    except JobNotFound:
        return None
