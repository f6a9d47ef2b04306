"""What the planner reads of the graph: DAG context and siblings by relatedness."""

from __future__ import annotations

from datetime import UTC, datetime

from cronpilot.domain.graph.dependencies import with_dependants
from cronpilot.domain.graph.graph import Edge, EdgeSource, EdgeType
from cronpilot.domain.model import (
    Endpoint,
    EndpointSpec,
    Run,
    RunStatus,
    RunTrigger,
    Schedule,
    ScheduleSource,
)
from cronpilot.domain.planning.context import Neighbour, dag_context, related_siblings

T0 = datetime(2030, 1, 1, tzinfo=UTC)


def _job() -> dict[str, Endpoint]:
    specs = [
        EndpointSpec("fetch", "https://x.io/f", Schedule(interval_seconds=60)),
        EndpointSpec("report", "https://x.io/r", Schedule(interval_seconds=60)),
        EndpointSpec("audit", "https://x.io/a", Schedule(interval_seconds=60)),
        EndpointSpec("load", "https://x.io/l", Schedule(), depends_on=("fetch",)),
    ]
    return {s.name: Endpoint(f"id-{s.name}", "job", "etl", s) for s in with_dependants(specs)}


def _run(endpoint_id: str, status: RunStatus) -> Run:
    return Run(
        "r",
        endpoint_id,
        "job",
        "t",
        RunTrigger.SCHEDULE,
        ScheduleSource.BASELINE,
        status,
        T0,
        T0,
        "w",
    )


def test_dag_context_lists_neighbours_with_edge_types_and_latest_status() -> None:
    job = _job()
    edges = [
        Edge("etl", "etl/fetch", EdgeType.CONTAINS, EdgeSource.TEMPLATE, 0, T0),
        Edge("etl/fetch", "etl/load", EdgeType.PROVIDES, EdgeSource.INFERRED, 0, T0),
        Edge("etl/report", "etl/fetch", EdgeType.SEQUENCE, EdgeSource.INFERRED, 2, T0),
    ]
    latest = {"id-load": _run("id-load", RunStatus.SKIPPED)}
    context = dag_context(job["fetch"], list(job.values()), edges, latest)
    assert context.upstream == (Neighbour("etl/report", (EdgeType.SEQUENCE,), None),)
    assert context.downstream == (
        Neighbour("etl/load", (EdgeType.DEPENDENCY, EdgeType.PROVIDES), "skipped"),
    )
    load = dag_context(
        job["load"], list(job.values()), [], {"id-fetch": _run("id-fetch", RunStatus.FAILED)}
    )
    assert load.upstream == (Neighbour("etl/fetch", (EdgeType.DEPENDENCY,), "failed"),)


def test_siblings_come_most_related_first() -> None:
    job = _job()
    edges = [
        Edge("etl/fetch", "etl/load", EdgeType.DEPENDENCY, EdgeSource.OBSERVED, 3, T0),
        Edge("etl/audit", "etl/fetch", EdgeType.SEQUENCE, EdgeSource.INFERRED, 1, T0),
    ]
    ordered = related_siblings(job["fetch"], list(job.values()), edges, T0)
    assert [e.name for e in ordered] == ["load", "audit", "report"]


def test_declared_dependencies_relate_siblings_even_without_stored_edges() -> None:
    job = _job()
    audit = [Edge("etl/audit", "etl/fetch", EdgeType.SEQUENCE, EdgeSource.TEMPLATE, 0, T0)]
    ordered = related_siblings(job["fetch"], list(job.values()), audit, T0)
    assert [e.name for e in ordered] == ["load", "audit", "report"]
