"""An admin's hand on one endpoint's schedule: pause and resume, each audited with the change."""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import datetime

from cronpilot.domain.audit import AuditAction, audit_entry
from cronpilot.domain.log_extra import log_extra
from cronpilot.domain.model import Endpoint, Pause
from cronpilot.domain.ports import UnitOfWorkFactory, Waker

log = logging.getLogger(__name__)


async def pause_endpoint(
    uow: UnitOfWorkFactory, ref: str, pause: Pause, actor: str, now: datetime
) -> Endpoint:
    """Pause `ref` (by id or `job/endpoint`) for `actor`, who is kept as the pause's `by`;
    returns it re-planned. Raises `EndpointNotFound`."""
    until = "until resumed" if pause.until is None else f"until {pause.until.isoformat()}"
    updated = await _set_pause(
        uow,
        ref,
        replace(pause, by=actor),
        now,
        actor=actor,
        action="pause",
        detail=f"{until}: {pause.reason}",
    )
    log.info(
        "paused %s",
        updated.ref,
        extra=log_extra("pause", endpoint_id=updated.id),
    )
    return updated


async def resume_endpoint(
    uow: UnitOfWorkFactory, waker: Waker | None, ref: str, actor: str, now: datetime
) -> Endpoint:
    """Lift `ref`'s pause for `actor`, re-plan it from its baseline and hints and wake the
    schedulers (it may be due now). Raises `EndpointNotFound`."""
    updated = await _set_pause(uow, ref, None, now, actor=actor, action="resume", detail="")
    if waker is not None:
        await waker.notify()
    log.info(
        "resumed %s",
        updated.ref,
        extra=log_extra("resume", endpoint_id=updated.id),
    )
    return updated


async def _set_pause(
    uow: UnitOfWorkFactory,
    ref: str,
    pause: Pause | None,
    now: datetime,
    *,
    actor: str,
    action: AuditAction,
    detail: str,
) -> Endpoint:
    async with uow() as tx:
        endpoint = await tx.catalog.get_endpoint(ref)
        updated = await tx.catalog.set_pause(endpoint.id, pause, now)
        await tx.access.record(audit_entry(actor, action, endpoint.ref, detail, now))
        await tx.commit()
    return updated
