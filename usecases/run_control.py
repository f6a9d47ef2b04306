"""An admin's hand on runs already made: cancel one that is queued or running,
retry one as a new manual run of its endpoint, and clear a DAG run from a node. Each in one
unit of work, audited with the actor; the schedulers are woken after the commit."""

from __future__ import annotations

import logging
from datetime import datetime

from cronpilot.domain.audit import audit_entry
from cronpilot.domain.cancelling import cancel_asked
from cronpilot.domain.dag_clear import clear_wait
from cronpilot.domain.errors import ConflictError, InvalidRunRequest, SlotAlreadyRun
from cronpilot.domain.log_extra import log_extra
from cronpilot.domain.model import Endpoint, Run, RunStatus
from cronpilot.domain.ports import UnitOfWorkFactory, Waker
from cronpilot.domain.requested_runs import fed_by_upstreams, manual_run

log = logging.getLogger(__name__)


async def cancel_run(uow: UnitOfWorkFactory, run_id: str, actor: str, now: datetime) -> Run:
    """Cancel the run `run_id` (an id or a unique prefix) for `actor`: a queued run is
    `cancelled` at once and never starts; a running one is marked, and the worker holding it
    cuts its call short and records it `cancelled` (`domain.cancelling`). Returns the run as
    the cancel left it. Raises `RunNotFound`, `AmbiguousId`, `RunFinished` (nothing changed),
    or `ConflictError` when a worker started or finished it at that very moment."""
    async with uow() as tx:
        run = await tx.runs.get_run(run_id)
        asked = cancel_asked(run, actor, now)
        if asked is not run and not await tx.runs.ask_cancel(asked, run.status):
            raise ConflictError(f"run {run.id} changed while it was being cancelled")
        endpoint = await tx.catalog.get_endpoint(run.endpoint_id)
        how = "before it started" if run.status is RunStatus.QUEUED else "while running"
        await tx.access.record(
            audit_entry(actor, "cancel", endpoint.ref, f"run {run.id} {how}", now)
        )
        await tx.commit()
    log.info(
        "cancel of run %s asked by %s",
        run.id,
        actor,
        extra=log_extra("cancel", endpoint_id=run.endpoint_id, run_id=run.id),
    )
    return asked


async def retry_run(
    uow: UnitOfWorkFactory, waker: Waker, run_id: str, actor: str, now: datetime
) -> Run:
    """Queue a new manual run, due now, of the endpoint of the run `run_id`, for `actor`
    (kept as its `requested_by` and in the audit log, which names the run retried). Raises
    `RunNotFound`, `AmbiguousId`, `InvalidRunRequest` (a DAG dependant whose request is filled
    from its upstreams' responses: clear its DAG run from it instead), or `SlotAlreadyRun`."""
    async with uow() as tx:
        run = await tx.runs.get_run(run_id)
        endpoint = await tx.catalog.get_endpoint(run.endpoint_id)
        if run.dag_run_id is not None and fed_by_upstreams(endpoint.spec):
            raise InvalidRunRequest(
                endpoint.ref,
                "its request is filled from its upstreams' responses; re-run it with theirs: "
                f"cronpilot dag clear {run.id} --from {endpoint.name}",
            )
        retry = manual_run(endpoint, actor, now)
        if not await tx.claims.enqueue([retry]):
            raise SlotAlreadyRun(endpoint.id, now)
        await tx.access.record(
            audit_entry(actor, "retry", endpoint.ref, f"run {retry.id} retries run {run.id}", now)
        )
        await tx.commit()
    await waker.notify()
    log.info(
        "queued a retry of run %s of %s",
        run.id,
        endpoint.ref,
        extra=log_extra("run_requested", endpoint_id=endpoint.id, run_id=retry.id),
    )
    return retry


async def clear_dag(
    uow: UnitOfWorkFactory,
    waker: Waker | None,
    root_run_id: str,
    node: str,
    *,
    actor: str,
    now: datetime,
) -> Endpoint:
    """Re-run the endpoint `node` (its name) and what depends on it in the DAG run that the run
    `root_run_id` began (or belongs to, for a dependant's run), with the answers its parents
    gave in that DAG run (`domain.dag_clear`); a scheduler's DAG sweep starts it. Returns the
    node's endpoint. Raises `RunNotFound`, `AmbiguousId` or `InvalidRunRequest` (nothing
    changed)."""
    async with uow() as tx:
        root = await tx.runs.get_run(root_run_id)
        runs = await tx.runs.dag_run_runs(root.dag_run_id or root.trace_id)
        # A dependant's run names its DAG run: clear the run that began it.
        root = next((r for r in runs if r.trace_id == root.dag_run_id), root)
        root_endpoint = await tx.catalog.get_endpoint(root.endpoint_id)
        job = await tx.catalog.list_endpoints(root_endpoint.job_name)
        wait = clear_wait(root, job, node, runs, now)
        await tx.dag.add_ready(wait)
        cleared = next(e for e in job if e.id == wait.endpoint_id)
        detail = f"DAG run {wait.dag_run_id} of run {root.id} from {node}"
        await tx.access.record(audit_entry(actor, "dag_clear", cleared.ref, detail, now))
        await tx.commit()
    if waker is not None:
        await waker.notify()
    log.info(
        "cleared DAG run %s from %s",
        wait.dag_run_id,
        cleared.ref,
        extra=log_extra("run_requested", endpoint_id=cleared.id, run_id=root.id),
    )
    return cleared
