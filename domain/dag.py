"""DAG runs: what happens to an endpoint's dependants when one of its runs ends.

A DAG run begins with a scheduled run (its trace id names the DAG run, its endpoint is the
root). Each dependant waits, in that DAG run, for every parent the root can reach; a parent
the root cannot reach (another root's upstream) is not waited for. Once all have reported,
the dependant either starts as a child of the last parent's run, or is skipped, and the skip
is a recorded run with its reason: an upstream failed or was skipped, it is paused, or
`only_if_changed` holds and no upstream response changed. A skip propagates to its own
dependants the same way. `advance` decides all of it; stores load, save and lease.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from cronpilot.domain.change_detection import comparable_hash, ignored_fields
from cronpilot.domain.field_paths import FieldPath
from cronpilot.domain.graph import dependency_graph
from cronpilot.domain.model import (
    JSON,
    Claim,
    DagTrigger,
    Endpoint,
    Run,
    RunStatus,
    RunTrigger,
    ScheduleSource,
    SkipKind,
    new_id,
)


@dataclass(frozen=True, slots=True)
class ParentOutcome:
    """How a parent's run in this DAG run ended."""

    run_id: str
    trace_id: str
    ok: bool
    changed: bool = True
    """Its response differs from the parent's previous successful one."""
    skipped: bool = False


@dataclass(frozen=True, slots=True)
class DagWait:
    """A dependant collecting its parents' outcomes in one DAG run."""

    dag_run_id: str
    endpoint_id: str
    root: str
    created_at: datetime
    arrived: dict[str, ParentOutcome] = field(default_factory=dict)
    ready: bool = False
    """Every parent reported, but the endpoint was leased: a later sweep starts it."""
    parent_trace_id: str | None = None
    """Once ready: the trace of the parent run whose report made it so."""


@dataclass(slots=True)
class DagPlan:
    waiting: dict[str, DagWait] = field(default_factory=dict)
    """Waits to save (new or with one more parent), by endpoint id."""
    finished: list[DagWait] = field(default_factory=list)
    """Waits complete: delete them (the run started or the skip recorded is their trace)."""
    skipped: list[Run] = field(default_factory=list)
    skips: list[SkipKind] = field(default_factory=list)
    """Why each of `skipped` was skipped, in step with it."""
    start: list[tuple[Endpoint, DagWait, DagTrigger]] = field(default_factory=list)


def dependencies_of(endpoints: Sequence[Endpoint]) -> dict[str, tuple[str, ...]]:
    return {e.name: e.spec.depends_on for e in endpoints}


def awaited_parents(dependencies: Mapping[str, Sequence[str]], root: str, node: str) -> set[str]:
    """The parents of `node` that the DAG run begun at `root` reaches (root included)."""
    import networkx as nx  # where it is used: see `domain.graph`

    graph = dependency_graph(dependencies)
    reach = {root} | {str(n) for n in nx.descendants(graph, root)} if root in graph else {root}
    return {parent for parent in dependencies.get(node, ()) if parent in reach}


def skip_reason(endpoint: Endpoint, wait: DagWait, now: datetime) -> tuple[SkipKind, str] | None:
    """Why the dependant `endpoint`, all its parents arrived in `wait`, is not called at `now`
    (its kind, and in words): paused, an upstream failed or was skipped, its own `Retry-After`
    still holds (it has no schedule to carry it: the DAG run is its only caller), or nothing
    changed upstream under `only_if_changed`; None when it runs."""
    pause = endpoint.pause
    if pause is not None and (pause.until is None or pause.until > now):
        return SkipKind.PAUSED, "paused"
    for name, outcome in sorted(wait.arrived.items()):
        if outcome.skipped:
            return SkipKind.UPSTREAM_SKIPPED, f"upstream {name!r} was skipped"
        if not outcome.ok:
            return SkipKind.UPSTREAM_FAILED, f"upstream {name!r} failed"
    retry_after = endpoint.retry_after_at
    if retry_after is not None and retry_after > now:
        return (
            SkipKind.RETRY_AFTER,
            f"the endpoint asked not to be called before {retry_after.isoformat()} (Retry-After)",
        )
    if endpoint.spec.only_if_changed and not any(o.changed for o in wait.arrived.values()):
        return SkipKind.UNCHANGED, "only_if_changed: no upstream response changed"
    return None


def skipped_run(
    endpoint: Endpoint, parent_trace_id: str, reason: str, worker_id: str, now: datetime
) -> Run:
    return Run(
        id=new_id(),
        endpoint_id=endpoint.id,
        job_id=endpoint.job_id,
        trace_id=new_id(),
        parent_trace_id=parent_trace_id,
        trigger=RunTrigger.DAG,
        schedule_source=ScheduleSource.DAG,
        status=RunStatus.SKIPPED,
        slot_at=now,
        started_at=now,
        finished_at=now,
        duration_ms=0.0,
        worker_id=worker_id,
        error_message=f"skipped: {reason}",
    )


def response_changed(run: Run, previous: Run | None, ignored: Sequence[FieldPath] = ()) -> bool:
    """Whether `run` answered differently from `previous` (the endpoint's successful run
    before it, None if there was none), the `ignored` fields aside (`change_detection`). A
    body that was not read (not JSON, too large) has no hash: whether it changed is unknown,
    so it counts as changed."""
    if previous is None:
        return True
    new, old = comparable_hash(run, ignored), comparable_hash(previous, ignored)
    return new is None or old is None or new != old


def changes_matter(endpoint: Endpoint, job: Sequence[Endpoint]) -> bool:
    """Whether a dependant of `endpoint` (in `job`) skips when nothing changed upstream: only
    then is a run compared with the one before (a read of it, and two hashes of large bodies,
    saved on every other finish)."""
    return any(e.spec.only_if_changed and e.name in endpoint.spec.dependants for e in job)


def outcome_of(run: Run, previous: Run | None, endpoint: Endpoint) -> ParentOutcome:
    """How `run` of `endpoint` ended, compared with the endpoint's `previous` success (None:
    none, or not read as `changes_matter` says: a change is assumed)."""
    changed = response_changed(run, previous, ignored_fields(endpoint))
    return ParentOutcome(run.id, run.trace_id, run.status is RunStatus.SUCCESS, changed)


def dag_of(claim_dag: DagTrigger | None, run: Run, endpoint: Endpoint) -> tuple[str, str]:
    """(DAG run id, root name) a finished run belongs to: its trigger's, or a new DAG run
    begun by this scheduled run."""
    if claim_dag is not None:
        return claim_dag.dag_run_id, claim_dag.root
    return run.trace_id, endpoint.name


def trigger_of(wait: DagWait, parent_trace_id: str) -> DagTrigger:
    return DagTrigger(
        dag_run_id=wait.dag_run_id,
        root=wait.root,
        parent_trace_id=parent_trace_id,
        parents={name: o.run_id for name, o in sorted(wait.arrived.items())},
    )


def dag_claim(
    endpoint: Endpoint,
    trigger: DagTrigger,
    upstream: dict[str, JSON],
    lease: tuple[str, float],
    now: datetime,
) -> Claim:
    """The claim of a dependant started by a DAG run: leased to `lease` = (worker id, seconds),
    its slot now, its request to be filled from `upstream` (responses by endpoint name)."""
    worker_id, seconds = lease
    lease_until = now + timedelta(seconds=seconds)
    leased = replace(endpoint, lease_owner=worker_id, lease_until=lease_until)
    return Claim(
        leased,
        new_id(),
        now,
        new_id(),
        lease_until,
        ScheduleSource.DAG,
        dag=replace(trigger, upstream=upstream),
    )


def ready_trigger(wait: DagWait) -> DagTrigger:
    """The trigger of a wait that became ready while its endpoint was leased."""
    assert wait.parent_trace_id is not None, "a ready wait knows its last parent"
    return trigger_of(wait, wait.parent_trace_id)


def advance(
    job: Sequence[Endpoint],
    waits: Mapping[str, DagWait],
    finished: Endpoint,
    outcome: ParentOutcome,
    *,
    dag: tuple[str, str],
    worker_id: str,
    now: datetime,
) -> DagPlan:
    """What follows `finished`'s run (`outcome`) in the DAG run `dag` = (id, root name).

    `job` holds every endpoint of the job, `waits` this DAG run's waits by endpoint id."""
    by_name = {e.name: e for e in job}
    dependencies = dependencies_of(job)
    dag_run_id, root = dag
    pending = dict(waits)
    plan = DagPlan()
    reported = [(finished, outcome)]
    while reported:
        parent, result = reported.pop(0)
        for name in parent.spec.dependants:
            node = by_name.get(name)
            if node is None or parent.name not in node.spec.depends_on:
                continue
            wait = pending.get(node.id) or DagWait(dag_run_id, node.id, root, now)
            wait = replace(wait, arrived={**wait.arrived, parent.name: result})
            if not awaited_parents(dependencies, root, name) <= set(wait.arrived):
                pending[node.id] = plan.waiting[node.id] = wait
                continue
            pending.pop(node.id, None)
            plan.waiting.pop(node.id, None)
            plan.finished.append(wait)
            skip = skip_reason(node, wait, now)
            if skip is None:
                plan.start.append((node, wait, trigger_of(wait, result.trace_id)))
                continue
            kind, reason = skip
            run = skipped_run(node, result.trace_id, reason, worker_id, now)
            plan.skipped.append(run)
            plan.skips.append(kind)
            reported.append((node, ParentOutcome(run.id, run.trace_id, False, False, True)))
    return plan
