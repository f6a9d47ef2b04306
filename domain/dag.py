"""DAG runs: what happens to an endpoint's dependants when one of its runs ends.

A DAG run begins with a scheduled run (its trace id names the DAG run, its endpoint is the
root). Each dependant waits, in that DAG run, for every parent the root can reach; a parent
the root cannot reach (another root's upstream) is not waited for. Once all have reported,
the dependant either starts as a child of the last parent's run, or is skipped, and the skip
is a recorded run with its reason: an upstream failed or was skipped, it is paused,
`only_if_changed` holds and no upstream response changed, or its `run_if` condition does not
hold on its parents' latest responses (the skip says the condition and its value) or cannot be
evaluated (the skip says the error: a dependant is not called on data its condition could not
read). A skip propagates to its own dependants the same way. `advance` decides all of it;
stores load (`run_if_reads` says which parents' runs), save and lease.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from cronpilot.domain import conditions
from cronpilot.domain.excerpt import excerpt
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


def skip_reason(
    endpoint: Endpoint,
    wait: DagWait,
    now: datetime,
    responses: Mapping[str, conditions.Response],
) -> tuple[SkipKind, str] | None:
    """Why the dependant `endpoint`, all its parents arrived in `wait`, is not called at `now`
    (its kind, and in words): paused, an upstream failed or was skipped, its own `Retry-After`
    still holds (it has no schedule to carry it: the DAG run is its only caller), nothing
    changed upstream under `only_if_changed`, or its `run_if` does not hold on `responses`
    (the parents' latest, by name); None when it runs."""
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
    text = endpoint.spec.run_if
    if text is not None:
        verdict = _run_if(text, responses)
        if not verdict.holds:
            return SkipKind.CONDITION, verdict.explain(f"run_if {excerpt(text, 60)!r}")
    return None


def _run_if(text: str, responses: Mapping[str, conditions.Response]) -> conditions.Verdict:
    try:
        return conditions.condition(text).evaluate(None, responses)
    except conditions.ConditionError as error:
        # Checked when applied: only a change of the limits since could bring this here.
        return conditions.Verdict(False, str(error))


def run_if_reads(
    job: Sequence[Endpoint], waits: Mapping[str, DagWait], finished: Endpoint, run: Run
) -> dict[str, str | None]:
    """The parents whose responses the `run_if` conditions of `finished`'s dependants read
    (only they can become ready when `run` reports), by name: the id of its run in this DAG
    run, or None where it has none here (another root's upstream), whose latest successful
    run is read. Empty, and nothing to load, when no dependant has a condition."""
    by_name = {e.name: e for e in job}
    reads: dict[str, str | None] = {}
    for name in finished.spec.dependants:
        node = by_name.get(name)
        text = None if node is None else node.spec.run_if
        if node is None or text is None:
            continue
        wait = waits.get(node.id)
        arrived = {} if wait is None else {p: o.run_id for p, o in wait.arrived.items()}
        arrived[finished.name] = run.id
        try:
            roots = conditions.condition(text).roots
        except conditions.ConditionError:
            continue
        for parent in roots & set(node.spec.depends_on):
            reads[parent] = arrived.get(parent)
    return reads


def reading(run: Run) -> conditions.Response:
    """A stored run as a condition reads it."""
    return conditions.Response(run.body, run.status_code, run.duration_ms)


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


def response_changed(run: Run, previous: Run | None) -> bool:
    """Whether `run` answered differently from `previous` (the endpoint's successful run
    before it, None if there was none). A body that was not read (not JSON, too large) has
    no hash: whether it changed is unknown, so it counts as changed."""
    if previous is None or run.body_hash is None or previous.body_hash is None:
        return True
    return previous.body_hash != run.body_hash


def outcome_of(run: Run, previous: Run | None) -> ParentOutcome:
    return ParentOutcome(
        run.id, run.trace_id, run.status is RunStatus.SUCCESS, response_changed(run, previous)
    )


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
    responses: Mapping[str, conditions.Response] | None = None,
) -> DagPlan:
    """What follows `finished`'s run (`outcome`) in the DAG run `dag` = (id, root name).

    `job` holds every endpoint of the job, `waits` this DAG run's waits by endpoint id,
    `responses` the parents' responses that `run_if_reads` named, by name."""
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
            skip = skip_reason(node, wait, now, responses or {})
            if skip is None:
                plan.start.append((node, wait, trigger_of(wait, result.trace_id)))
                continue
            kind, reason = skip
            run = skipped_run(node, result.trace_id, reason, worker_id, now)
            plan.skipped.append(run)
            plan.skips.append(kind)
            reported.append((node, ParentOutcome(run.id, run.trace_id, False, False, True)))
    return plan
