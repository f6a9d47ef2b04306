"""An admin's hand on one endpoint's schedule: pause and resume."""

from __future__ import annotations

import logging
from datetime import datetime

from cronpilot.domain.log_extra import log_extra
from cronpilot.domain.model import Endpoint, Pause
from cronpilot.domain.ports import UnitOfWorkFactory, Waker

log = logging.getLogger(__name__)


async def pause_endpoint(uow: UnitOfWorkFactory, ref: str, pause: Pause, now: datetime) -> Endpoint:
    """Pause `ref` (by id or `job/endpoint`); returns it re-planned. Raises `EndpointNotFound`."""
    updated = await _set_pause(uow, ref, pause, now)
    log.info(
        "paused %s",
        updated.ref,
        extra=log_extra("pause", endpoint_id=updated.id),
    )
    return updated


async def resume_endpoint(
    uow: UnitOfWorkFactory, waker: Waker | None, ref: str, now: datetime
) -> Endpoint:
    """Lift `ref`'s pause, re-plan it from its baseline and hints and wake the schedulers (it
    may be due now). Raises `EndpointNotFound`."""
    updated = await _set_pause(uow, ref, None, now)
    if waker is not None:
        await waker.notify()
    log.info(
        "resumed %s",
        updated.ref,
        extra=log_extra("resume", endpoint_id=updated.id),
    )
    return updated


async def _set_pause(
    uow: UnitOfWorkFactory, ref: str, pause: Pause | None, now: datetime
) -> Endpoint:
    async with uow() as tx:
        endpoint = await tx.catalog.get_endpoint(ref)
        updated = await tx.catalog.set_pause(endpoint.id, pause, now)
        await tx.commit()
    return updated
