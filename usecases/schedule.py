"""An admin's hand on a schedule: pause and resume one endpoint, or a whole job, each audited
with the change."""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import datetime

from cronpilot.domain.access.audit import AuditAction, audit_entry
from cronpilot.domain.errors import PreconditionFailed
from cronpilot.domain.log_extra import log_extra
from cronpilot.domain.model import Endpoint, Job, Pause
from cronpilot.domain.ports import UnitOfWorkFactory, Waker
from cronpilot.domain.runs.transitions import with_pause
from cronpilot.domain.schedule.pauses import pause_end
from cronpilot.domain.versions import endpoint_version

log = logging.getLogger(__name__)


async def pause_endpoint(
    uow: UnitOfWorkFactory,
    ref: str,
    pause: Pause,
    actor: str,
    now: datetime,
    *,
    if_version: str | None = None,
) -> Endpoint:
    """Pause `ref` (by id or `job/endpoint`) for `actor`, who is kept as the pause's `by`;
    returns it re-planned. Raises `InvalidConfig` for an `until` that `pause_end` refuses,
    `EndpointNotFound`, or `PreconditionFailed` when `if_version` is given and is not its
    version."""
    if pause.until is not None:
        pause_end(pause.until, now)
    until = "until resumed" if pause.until is None else f"until {pause.until.isoformat()}"
    updated = await _set_pause(
        uow,
        ref,
        replace(pause, by=actor),
        now,
        actor=actor,
        action="pause",
        detail=f"{until}: {pause.reason}",
        if_version=if_version,
    )
    log.info(
        "paused %s",
        updated.ref,
        extra=log_extra("pause", endpoint_id=updated.id),
    )
    return updated


async def resume_endpoint(
    uow: UnitOfWorkFactory,
    waker: Waker | None,
    ref: str,
    actor: str,
    now: datetime,
    *,
    if_version: str | None = None,
) -> Endpoint:
    """Lift `ref`'s pause for `actor`, re-plan it from its baseline and hints and wake the
    schedulers (it may be due now). Raises `EndpointNotFound`, or `PreconditionFailed` (see
    `pause_endpoint`)."""
    updated = await _set_pause(
        uow, ref, None, now, actor=actor, action="resume", detail="", if_version=if_version
    )
    if waker is not None:
        await waker.notify()
    log.info(
        "resumed %s",
        updated.ref,
        extra=log_extra("resume", endpoint_id=updated.id),
    )
    return updated


async def pause_job(
    uow: UnitOfWorkFactory, name: str, pause: Pause, actor: str, now: datetime
) -> Job:
    """Pause the job `name` for `actor` (kept as the pause's `by`): none of its endpoints runs
    while it holds, DAG runs reaching them neither; their own pauses stay underneath. Raises
    `InvalidConfig` for an `until` that `pause_end` refuses, or `JobNotFound`."""
    if pause.until is not None:
        pause_end(pause.until, now)
    until = "until resumed" if pause.until is None else f"until {pause.until.isoformat()}"
    async with uow() as tx:
        job = await tx.catalog.set_job_pause(name, replace(pause, by=actor), now)
        await tx.access.record(
            audit_entry(actor, "pause", job.name, f"{until}: {pause.reason}", now)
        )
        await tx.commit()
    log.info("paused job %s", job.name, extra=log_extra("pause", job=job.name))
    return job


async def resume_job(
    uow: UnitOfWorkFactory, waker: Waker | None, name: str, actor: str, now: datetime
) -> Job:
    """Lift the job's pause for `actor` and wake the schedulers: its endpoints run again as
    their own pauses and plans say, their next slots counted from now (slots passed meanwhile
    are skipped, neither caught up nor told late or missed). Raises `JobNotFound`."""
    async with uow() as tx:
        job = await tx.catalog.set_job_pause(name, None, now)
        await tx.access.record(audit_entry(actor, "resume", job.name, "", now))
        await tx.commit()
    if waker is not None:
        await waker.notify()
    log.info("resumed job %s", job.name, extra=log_extra("resume", job=job.name))
    return job


async def _set_pause(
    uow: UnitOfWorkFactory,
    ref: str,
    pause: Pause | None,
    now: datetime,
    *,
    actor: str,
    action: AuditAction,
    detail: str,
    if_version: str | None,
) -> Endpoint:
    async with uow() as tx:
        # Held until the unit ends: no other write can slip between the read (the version's
        # check, the decision) and the write.
        endpoint = await tx.catalog.get_endpoint(ref, for_update=True)
        if if_version is not None and if_version != endpoint_version(endpoint):
            raise PreconditionFailed(endpoint.ref)
        updated = with_pause(endpoint, pause, now)
        await tx.catalog.save_schedule(updated)
        await tx.access.record(audit_entry(actor, action, endpoint.ref, detail, now))
        await tx.commit()
    return updated
