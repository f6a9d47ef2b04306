"""Runs asked for by hand: `request_run` (one now) and `request_backfill` (the past slots of a
range that have none). Each queues runs for the scheduler workers in one unit of work and
wakes them once it is committed."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from cronpilot.domain.access.audit import audit_entry
from cronpilot.domain.errors import SlotAlreadyRun
from cronpilot.domain.log_extra import log_extra
from cronpilot.domain.model import Endpoint, Run
from cronpilot.domain.ports import UnitOfWorkFactory, Waker
from cronpilot.domain.runs.requested_runs import backfill_runs, backfill_slots, manual_run

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class BackfillReport:
    endpoint: Endpoint
    queued: list[Run]
    """The runs queued, oldest slot first."""
    skipped: int
    """Slots of the range that had a run already (whatever its status)."""


async def request_run(
    uow: UnitOfWorkFactory, waker: Waker, ref: str, actor: str, now: datetime
) -> Run:
    """Queue one run of `ref` due now (trigger `manual`) for `actor`, who is kept as the run's
    `requested_by` and in the audit log. Raises `EndpointNotFound`,
    `InvalidRunRequest` (see `domain.runs.requested_runs.manual_run`), or `SlotAlreadyRun` when a
    run of that endpoint has `now` as its slot already."""
    async with uow() as tx:
        endpoint = await tx.catalog.get_endpoint(ref)
        run = manual_run(endpoint, actor, now)
        if not await tx.claims.enqueue([run]):
            raise SlotAlreadyRun(endpoint.id, now)
        await tx.access.record(audit_entry(actor, "run_now", endpoint.ref, f"run {run.id}", now))
        await tx.commit()
    await waker.notify()
    log.info(
        "queued a manual run of %s",
        endpoint.ref,
        extra=log_extra("run_requested", endpoint_id=endpoint.id, run_id=run.id),
    )
    return run


async def request_backfill(
    uow: UnitOfWorkFactory,
    waker: Waker,
    ref: str,
    *,
    start: datetime,
    end: datetime,
    max_slots: int,
    actor: str,
    now: datetime,
) -> BackfillReport:
    """Queue a run (trigger `backfill`) for every baseline slot in [start, end] that has none,
    oldest first and paced (`domain.runs.requested_runs`); times without an offset are the
    endpoint's local time. Idempotent: the slots that have a run are skipped and counted.
    `actor` is kept as each run's `requested_by`, and in the audit log when runs were queued.
    Raises `EndpointNotFound` or `InvalidRunRequest` (nothing queued)."""
    async with uow() as tx:
        endpoint = await tx.catalog.get_endpoint(ref)
        slots = backfill_slots(endpoint, start, end, now)
        taken = await tx.runs.slots_taken(endpoint.id, slots[0], slots[-1]) if slots else set()
        runs = backfill_runs(
            endpoint, [slot for slot in slots if slot not in taken], max_slots, actor, now
        )
        # A backfill running beside this one may have taken some of these slots meanwhile: the
        # slot key leaves them out.
        queued = await tx.claims.enqueue(runs)
        if queued:
            span = f"{queued[0].slot_at.isoformat()} to {queued[-1].slot_at.isoformat()}"
            detail = f"{len(queued)} runs queued, slots {span}"
            await tx.access.record(audit_entry(actor, "backfill", endpoint.ref, detail, now))
        await tx.commit()
    if queued:
        await waker.notify()
        log.info(
            "queued %d backfill runs of %s",
            len(queued),
            endpoint.ref,
            extra=log_extra("backfill_requested", endpoint_id=endpoint.id, count=len(queued)),
        )
    return BackfillReport(endpoint, queued, len(slots) - len(queued))
