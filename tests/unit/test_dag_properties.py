"""DAG runs over generated DAGs, outcomes and completion orders: every node the root reaches
ends exactly once (started or skipped), never before every awaited parent reported, and a node
starts exactly when its parents allow it."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from cronpilot.domain.graph.dag import DagWait, ParentOutcome, advance, awaited_parents
from cronpilot.domain.graph.dependencies import with_dependants
from cronpilot.domain.model import Endpoint, EndpointSpec, Schedule

T0 = datetime(2030, 1, 1, tzinfo=UTC)
N = 6
NAMES = [f"n{i}" for i in range(N)]
EDGES = st.lists(
    st.tuples(st.integers(0, N - 1), st.integers(0, N - 1)).filter(lambda p: p[0] < p[1]),
    max_size=12,
    unique=True,
)


def _job(edges: list[tuple[int, int]], picky: set[str]) -> dict[str, Endpoint]:
    specs = []
    for name in NAMES:
        ups = tuple(NAMES[a] for a, b in edges if NAMES[b] == name)
        schedule = Schedule() if ups else Schedule(interval_seconds=60)
        specs.append(
            EndpointSpec(
                name,
                f"https://x.io/{name}",
                schedule,
                depends_on=ups,
                only_if_changed=bool(ups) and name in picky,
            )
        )
    return {s.name: Endpoint(f"id-{s.name}", "job", "j", s) for s in with_dependants(specs)}


@settings(max_examples=300, deadline=None)
@given(EDGES, st.sets(st.sampled_from(NAMES)), st.data())
def test_every_reached_node_ends_once_and_starts_only_when_its_parents_allow(
    edges: list[tuple[int, int]], picky: set[str], data: st.DataObject
) -> None:
    job = _job(edges, picky)
    deps = {name: job[name].spec.depends_on for name in NAMES}
    reached = {"n0"} | _descendants(deps, "n0")
    waits: dict[str, DagWait] = {}
    reports: dict[str, ParentOutcome] = {}
    ended: list[str] = []
    pending = [("n0", _outcome(data, "n0"))]
    while pending:
        name, outcome = pending.pop(data.draw(st.integers(0, len(pending) - 1)))
        reports[name] = outcome
        plan = advance(
            list(job.values()), waits, job[name], outcome, dag=("d", "n0"), worker_id="w", now=T0
        )
        waits.update(plan.waiting)
        for wait in plan.finished:
            waits.pop(wait.endpoint_id, None)
        for run in plan.skipped:
            skipped = run.endpoint_id.removeprefix("id-")
            ended.append(skipped)
            reports[skipped] = ParentOutcome(run.id, run.trace_id, False, False, True)
            _check_allowed(job, deps, reports, skipped, started=False)
        for node, _, _ in plan.start:
            ended.append(node.name)
            _check_allowed(job, deps, reports, node.name, started=True)
            pending.append((node.name, _outcome(data, node.name)))

    assert sorted(ended) == sorted(reached - {"n0"})
    assert waits == {}


def _outcome(data: st.DataObject, name: str) -> ParentOutcome:
    ok, changed = data.draw(st.booleans()), data.draw(st.booleans())
    return ParentOutcome(f"run-{name}", f"trace-{name}", ok, changed)


def _descendants(deps: dict[str, tuple[str, ...]], root: str) -> set[str]:
    found, frontier = set(), [root]
    while frontier:
        node = frontier.pop()
        for child, ups in deps.items():
            if node in ups and child not in found:
                found.add(child)
                frontier.append(child)
    return found


def _check_allowed(
    job: dict[str, Endpoint],
    deps: dict[str, tuple[str, ...]],
    reports: dict[str, ParentOutcome],
    name: str,
    *,
    started: bool,
) -> None:
    awaited = awaited_parents(deps, "n0", name)
    assert awaited <= set(reports), f"{name} ended before all of {awaited} reported"
    parents = [reports[p] for p in awaited]
    allowed = all(p.ok and not p.skipped for p in parents) and (
        not job[name].spec.only_if_changed or any(p.changed for p in parents)
    )
    assert allowed == started
