"""Clearing a DAG run from a node (`dag clear ROOT_RUN --from NODE`): the node runs
again in that DAG run, fed the answers its parents gave in it, and what depends on it follows
as in any DAG run (the node is the root of what is re-run: its other descendants' parents
outside it are not waited for). A retry of a dependant's run (`runs retry`) is the same clear
limited to the node: its run reports to no dependant (`domain.graph.dag.ALONE`)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from cronpilot.domain.errors import InvalidRunRequest
from cronpilot.domain.graph.dag import ALONE, DagWait, outcome_of
from cronpilot.domain.model import Endpoint, Run


def clear_wait(
    root_run: Run,
    job: Sequence[Endpoint],
    node: str,
    dag_runs: Sequence[Run],
    now: datetime,
    *,
    alone: bool = False,
) -> DagWait:
    """The ready wait that re-runs `node` (an endpoint name of the job `job`), and what
    depends on it unless `alone`, in the DAG run that `root_run` began, whose runs are
    `dag_runs` (the root's included): its parents' outcomes are their latest runs there.
    Raises `InvalidRunRequest` when `root_run` began no DAG run, `node` is not in its job, is
    the root itself, or a parent has no run there."""
    by_id = {e.id: e for e in job}
    by_name = {e.name: e for e in job}
    root = by_id.get(root_run.endpoint_id)
    if root is None or root_run.dag_run_id is not None or not root.spec.dependants:
        raise InvalidRunRequest(
            f"run {root_run.id}", "began no DAG run (pass the run of a DAG's root)"
        )
    target = by_name.get(node)
    if target is None:
        raise InvalidRunRequest(
            f"{root.job_name}/{node}", f"not an endpoint of job {root.job_name!r}"
        )
    if target.id == root.id:
        raise InvalidRunRequest(target.ref, "is the DAG run's root: retry its run instead")
    arrived = {}
    latest: Run | None = None
    for parent in target.spec.depends_on:
        runs = [r for r in dag_runs if r.endpoint_id == by_name[parent].id and r.status.finished]
        if not runs:
            raise InvalidRunRequest(
                target.ref, f"its upstream {parent!r} has no finished run in this DAG run"
            )
        last = max(runs, key=lambda r: (r.started_at, r.id))
        arrived[parent] = outcome_of(last, None, by_name[parent])
        if latest is None or (last.started_at, last.id) > (latest.started_at, latest.id):
            latest = last
    assert latest is not None, "a dependant has parents"
    return DagWait(
        dag_run_id=root_run.trace_id,
        endpoint_id=target.id,
        root=ALONE if alone else target.name,
        created_at=now,
        arrived=arrived,
        ready=True,
        parent_trace_id=latest.trace_id,
    )
