"""An admin's hand on runs already made: cancel one that is queued or running,
retry one as a new manual run of its endpoint (a DAG dependant's: its node alone, again in its
DAG run), and clear a DAG run from a node. Each in one unit of work, audited with the actor;
the schedulers are woken after the commit."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from cronpilot.domain.access.audit import audit_entry
from cronpilot.domain.errors import ConflictError, SlotAlreadyRun
from cronpilot.domain.graph.dag import DagWait
from cronpilot.domain.graph.dag_clear import clear_wait
from cronpilot.domain.log_extra import log_extra
from cronpilot.domain.model import Endpoint, Run, RunStatus
from cronpilot.domain.ports import UnitOfWork, UnitOfWorkFactory, Waker
from cronpilot.domain.runs.cancelling import cancel_asked
from cronpilot.domain.runs.requested_runs import check_retryable, manual_run

log = logging.getLogger(__name__)


async def cancel_run(uow: UnitOfWorkFactory, run_id: str, actor: str, now: datetime) -> Run:
    """Cancel the run `run_id` (an id or a unique prefix) for `actor`: a queued run is
    `cancelled` at once and never starts; a running one is marked, and the worker holding it
    cuts its call short and records it `cancelled` (`domain.runs.cancelling`). Returns the run as
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


@dataclass(frozen=True, slots=True)
class Retried:
    """What a retry queued: a manual run of `endpoint`, or for a DAG dependant's run (`run`
    None) its node alone, in that DAG run, which a scheduler's DAG sweep starts."""

    endpoint: Endpoint
    run: Run | None


async def retry_run(
    uow: UnitOfWorkFactory, waker: Waker, run_id: str, actor: str, now: datetime
) -> Retried:
    """Retry the run `run_id` for `actor` (in the audit log, which names the run retried): a
    new manual run, due now, of its endpoint (`actor` is its `requested_by`); a DAG
    dependant's run re-runs its node alone in its DAG run, with the answers its upstreams gave
    there (`clear_dag` limited to the node: what depends on it does not run again). Raises
    `RunNotFound`, `AmbiguousId`, `InvalidRunRequest` (a run outside a DAG run that has not
    ended: a second call would go out beside it; or a dependant's upstream has no finished run
    there any more) or `SlotAlreadyRun`."""
    async with uow() as tx:
        run = await tx.runs.get_run(run_id)
        endpoint = await tx.catalog.get_endpoint(run.endpoint_id)
        retry = None
        if run.dag_run_id is None:
            check_retryable(run, endpoint.ref)
            queued = manual_run(endpoint, actor, now)
            if not await tx.claims.enqueue([queued]):
                raise SlotAlreadyRun(endpoint.id, now)
            retry, detail = queued, f"run {queued.id} retries run {run.id}"
        else:
            _, wait, _ = await _cleared(tx, run, endpoint.name, now, alone=True)
            detail = f"run {run.id} again alone in DAG run {wait.dag_run_id}"
        await tx.access.record(audit_entry(actor, "retry", endpoint.ref, detail, now))
        await tx.commit()
    await waker.notify()
    log.info(
        "queued a retry of run %s of %s",
        run.id,
        endpoint.ref,
        extra=log_extra(
            "run_requested", endpoint_id=endpoint.id, run_id=run.id if retry is None else retry.id
        ),
    )
    return Retried(endpoint, retry)


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
    gave in that DAG run (`domain.graph.dag_clear`); a scheduler's DAG sweep starts it. Returns the
    node's endpoint. Raises `RunNotFound`, `AmbiguousId` or `InvalidRunRequest` (nothing
    changed)."""
    async with uow() as tx:
        root, wait, cleared = await _cleared(tx, await tx.runs.get_run(root_run_id), node, now)
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


async def _cleared(
    tx: UnitOfWork, run: Run, node: str, now: datetime, *, alone: bool = False
) -> tuple[Run, DagWait, Endpoint]:
    """Add, in `tx`, the ready wait that re-runs `node` (and, unless `alone`, what depends on
    it) in the DAG run that `run` began or belongs to (`domain.graph.dag_clear`). Returns the run
    that began that DAG run, the wait and the node's endpoint."""
    runs = await tx.runs.dag_run_runs(run.dag_run_id or run.trace_id)
    # A dependant's run names its DAG run: clear the run that began it.
    root = next((r for r in runs if r.trace_id == run.dag_run_id), run)
    root_endpoint = await tx.catalog.get_endpoint(root.endpoint_id)
    job = await tx.catalog.list_endpoints(root_endpoint.job_name)
    wait = clear_wait(root, job, node, runs, now, alone=alone)
    await tx.dag.add_ready(wait)
    return root, wait, next(e for e in job if e.id == wait.endpoint_id)
