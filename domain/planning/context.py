"""What the planner reads about an endpoint's place in the graph: its DAG neighbours (with
the edge types joining them and how their latest run went) and its siblings, most related
first, so that it reads the siblings that matter before the others."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from cronpilot.domain.graph.graph import Edge, EdgeSource, EdgeType, related
from cronpilot.domain.model import Endpoint, Run


@dataclass(frozen=True, slots=True)
class Neighbour:
    ref: str
    edge_types: tuple[EdgeType, ...]
    latest_status: str | None
    """The status of its newest run (`success`, `failed`, `skipped`, …); None if it never ran."""


@dataclass(frozen=True, slots=True)
class DagContext:
    ref: str
    upstream: tuple[Neighbour, ...]
    downstream: tuple[Neighbour, ...]


def dag_context(
    endpoint: Endpoint,
    job: Sequence[Endpoint],
    edges: Sequence[Edge],
    latest: Mapping[str, Run],
) -> DagContext:
    """Endpoints of `job` joined to `endpoint` by an edge (any type but `contains`), split
    by direction; declared dependencies count even before any edge was recorded."""
    by_ref = {e.ref: e for e in job}
    ups: dict[str, set[EdgeType]] = {
        f"{endpoint.job_name}/{name}": {EdgeType.DEPENDENCY} for name in endpoint.spec.depends_on
    }
    downs: dict[str, set[EdgeType]] = {
        f"{endpoint.job_name}/{name}": {EdgeType.DEPENDENCY} for name in endpoint.spec.dependants
    }
    for edge in edges:
        if edge.type is EdgeType.CONTAINS or edge.from_node == edge.to_node:
            continue
        if edge.to_node == endpoint.ref and edge.from_node in by_ref:
            ups.setdefault(edge.from_node, set()).add(edge.type)
        elif edge.from_node == endpoint.ref and edge.to_node in by_ref:
            downs.setdefault(edge.to_node, set()).add(edge.type)

    def neighbours(found: dict[str, set[EdgeType]]) -> tuple[Neighbour, ...]:
        return tuple(
            Neighbour(
                ref,
                tuple(sorted(types)),
                latest[by_ref[ref].id].status.value if by_ref[ref].id in latest else None,
            )
            for ref, types in sorted(found.items())
            if ref in by_ref
        )

    return DagContext(endpoint.ref, neighbours(ups), neighbours(downs))


def related_siblings(
    endpoint: Endpoint, job: Sequence[Endpoint], edges: Sequence[Edge], now: datetime
) -> list[Endpoint]:
    """The other endpoints of the job, most related to `endpoint` first (edge weights and
    Adamic-Adar, see `domain.graph.graph.related`). Declared dependencies count as `template` edges
    even where the store holds none (a job applied without the graph)."""
    by_ref = {e.ref: e for e in job if e.id != endpoint.id}
    known = {edge.key for edge in edges}
    declared = [
        Edge(f"{e.job_name}/{up}", e.ref, EdgeType.DEPENDENCY, EdgeSource.TEMPLATE, 0, now)
        for e in job
        for up in e.spec.depends_on
        if (f"{e.job_name}/{up}", e.ref, EdgeType.DEPENDENCY) not in known
    ]
    return [by_ref[ref] for ref in related([*edges, *declared], endpoint.ref, by_ref)]
