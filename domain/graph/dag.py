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

A dependant with `approval: required` that would start asks for an approval instead
(`domain.planning.approvals`), and its wait stays, knowing the run it would follow: approved, the
wait becomes ready and starts as a ready wait does (`DagRepository.claim_ready`); rejected or
expired, `declined` ends it in a skip, reported to its own dependants by `advance` itself.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from cronpilot.domain.alerts.alerts import Notification, approval_notifications
from cronpilot.domain.graph.change_detection import comparable_hash, ignored_fields
from cronpilot.domain.graph.field_paths import FieldPath
from cronpilot.domain.graph.graph import dependency_graph
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
from cronpilot.domain.planning.approvals import Approval, approval_request, skip_of
from cronpilot.domain.rules import conditions
from cronpilot.domain.runs.excerpt import excerpt
from cronpilot.domain.schedule.pauses import holds, job_holds


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


ALONE = ""
"""The root of a wait, and so of its run's trigger, that re-runs its node alone (a retry of a
dependant's run, `domain.graph.dag_clear`): no endpoint has this name, and such a run reports to no
dependant (`advance`)."""


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
    approvals: list[Approval] = field(default_factory=list)
    """Approvals to ask for: each dependant's wait is in `waiting`, with the parent trace it
    would follow, until an admin decides."""
    notifications: list[Notification] = field(default_factory=list)
    """The `approval_pending` alerts of `approvals`."""


def starting(plan: DagPlan) -> tuple[list[tuple[Endpoint, DagTrigger]], list[DagWait]]:
    """Which of `plan`'s dependants start now and which wait, ready: one whose endpoint no
    worker holds starts as its trigger's child; one leased (a run of its own under way) keeps
    its wait, marked ready with the trigger's trace, for the sweep (`claim_ready`) to start once
    the lease is gone. The endpoints are the store's current rows, locked by the caller."""
    now: list[tuple[Endpoint, DagTrigger]] = []
    ready: list[DagWait] = []
    for node, wait, trigger in plan.start:
        if node.lease_owner is None:
            now.append((node, trigger))
        else:
            ready.append(replace(wait, ready=True, parent_trace_id=trigger.parent_trace_id))
    return now, ready


def dependencies_of(endpoints: Sequence[Endpoint]) -> dict[str, tuple[str, ...]]:
    return {e.name: e.spec.depends_on for e in endpoints}


def awaited_parents(dependencies: Mapping[str, Sequence[str]], root: str, node: str) -> set[str]:
    """The parents of `node` that the DAG run begun at `root` reaches (root included)."""
    import networkx as nx  # where it is used: see `domain.graph.graph`

    graph = dependency_graph(dependencies)
    reach = {root} | {str(n) for n in nx.descendants(graph, root)} if root in graph else {root}
    return {parent for parent in dependencies.get(node, ()) if parent in reach}


def skip_reason(
    endpoint: Endpoint,
    wait: DagWait,
    now: datetime,
    responses: Mapping[str, conditions.Response],
    gated: Collection[str] = (),
) -> tuple[SkipKind, str] | None:
    """Why the dependant `endpoint`, all its parents arrived in `wait`, is not called at `now`
    (its kind, and in words): paused, an upstream failed or was skipped, its own `Retry-After`
    still holds (it has no schedule to carry it: the DAG run is its only caller), nothing
    changed upstream under `only_if_changed`, its `run_if` does not hold on `responses` (the
    parents' latest, by name), or it needs an approval and one is pending already (`gated`: the
    endpoint ids that have one); None when it runs."""
    if job_holds(endpoint, now):
        return SkipKind.PAUSED, f"its job {endpoint.job_name!r} is paused"
    if holds(endpoint.pause, now):
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
    if endpoint.spec.approval_timeout_seconds is not None and endpoint.id in gated:
        return (
            SkipKind.APPROVAL_PENDING,
            "an approval asked for in an earlier DAG run is still pending",
        )
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
    endpoint: Endpoint,
    parent_trace_id: str,
    reason: str,
    worker_id: str,
    now: datetime,
    *,
    dag_run_id: str,
) -> Run:
    return Run(
        id=new_id(),
        endpoint_id=endpoint.id,
        job_id=endpoint.job_id,
        trace_id=new_id(),
        parent_trace_id=parent_trace_id,
        dag_run_id=dag_run_id,
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


def skipped_outcome(run: Run) -> ParentOutcome:
    """How a skipped dependant reports to its own dependants."""
    return ParentOutcome(run.id, run.trace_id, ok=False, changed=False, skipped=True)


def changes_matter(endpoint: Endpoint, job: Sequence[Endpoint]) -> bool:
    """Whether a dependant of `endpoint` (in `job`) skips when nothing changed upstream: only
    then is a run compared with the one before (a read of it, and two hashes of large bodies,
    saved on every other finish)."""
    return any(e.spec.only_if_changed and e.name in endpoint.spec.dependants for e in job)


def outcome_of(run: Run, previous: Run | None, endpoint: Endpoint) -> ParentOutcome:
    """How `run` of `endpoint` ended, compared with the endpoint's `previous` success (None:
    none, or not read as `changes_matter` says: a change is assumed)."""
    changed = response_changed(run, previous, ignored_fields(endpoint))
    # A quiet period's skipped run skips its dependants as any skipped upstream does.
    skipped = run.status is RunStatus.SKIPPED
    return ParentOutcome(run.id, run.trace_id, run.status is RunStatus.SUCCESS, changed, skipped)


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
    gated: Collection[str] = (),
) -> DagPlan:
    """What follows `finished`'s run (`outcome`) in the DAG run `dag` = (id, root name):
    nothing when the root is `ALONE` (a node retried alone).

    `job` holds every endpoint of the job, `waits` this DAG run's waits by endpoint id,
    `responses` the parents' responses that `run_if_reads` named, by name, `gated` the ids of its
    endpoints with an approval pending."""
    by_name = {e.name: e for e in job}
    dependencies = dependencies_of(job)
    dag_run_id, root = dag
    pending = dict(waits)
    plan = DagPlan()
    reported = [] if root == ALONE else [(finished, outcome)]
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
            skip = skip_reason(node, wait, now, responses or {}, gated)
            if skip is None and node.spec.approval_timeout_seconds is not None:
                plan.waiting[node.id] = replace(wait, parent_trace_id=result.trace_id)
                approval = approval_request(node, dag_run_id, result.run_id, now)
                plan.approvals.append(approval)
                plan.notifications += approval_notifications(node, approval, now)
                continue
            plan.finished.append(wait)
            if skip is None:
                plan.start.append((node, wait, trigger_of(wait, result.trace_id)))
                continue
            kind, reason = skip
            run = skipped_run(node, result.trace_id, reason, worker_id, now, dag_run_id=dag_run_id)
            plan.skipped.append(run)
            plan.skips.append(kind)
            reported.append((node, skipped_outcome(run)))
    return plan


def declined(
    job: Sequence[Endpoint], waits: Mapping[str, DagWait], approval: Approval, now: datetime
) -> DagPlan:
    """What a rejected or expired `approval` does to its DAG run (`waits` by endpoint id): its
    dependant's wait ends in a recorded skip (run by whoever decided), which its own
    dependants hear of as `advance` reports any skip. Nothing when the wait is gone (its
    endpoint was re-declared out of the DAG)."""
    node = next((e for e in job if e.id == approval.endpoint_id), None)
    wait = waits.get(approval.endpoint_id)
    if node is None or wait is None or wait.parent_trace_id is None:
        return DagPlan()
    assert approval.decided_by is not None, "a declined approval names who declined it"
    kind, reason = skip_of(approval)
    run = skipped_run(
        node, wait.parent_trace_id, reason, approval.decided_by, now, dag_run_id=wait.dag_run_id
    )
    others = {endpoint_id: w for endpoint_id, w in waits.items() if endpoint_id != node.id}
    plan = advance(
        job,
        others,
        node,
        skipped_outcome(run),
        dag=(wait.dag_run_id, wait.root),
        worker_id=approval.decided_by,
        now=now,
    )
    assert not plan.start, "a skip only ever skips what follows it"
    plan.finished.insert(0, wait)
    plan.skipped.insert(0, run)
    plan.skips.insert(0, kind)
    return plan
