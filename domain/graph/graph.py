"""The tool graph: typed, weighted, counted edges between jobs and endpoints, and the maths
on it (networkx).

Nodes are refs: a job's name (`etl`) or an endpoint's `job/name` (`etl/fetch`). An edge is
keyed by (from, to, type), so one pair holds several types at once; its source says how it is
known (`template` declared in config, `inferred` from schemas or a first trace, `observed`
once seen `PROMOTION_COUNT` times in traces). Weight = type weight x source factor (design).
Self-loops and repeats are kept and counted.

networkx is imported by the functions that use it: its import alone costs about 0.1 s, which
a CLI command that does no graph maths should not pay.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from typing import Any, cast


class EdgeType(StrEnum):
    DEPENDENCY = "dependency"
    CONTAINS = "contains"
    PROVIDES = "provides"
    SEQUENCE = "sequence"


class EdgeSource(StrEnum):
    TEMPLATE = "template"
    INFERRED = "inferred"
    OBSERVED = "observed"


TYPE_WEIGHTS = {
    EdgeType.DEPENDENCY: 1.0,
    EdgeType.CONTAINS: 0.8,
    EdgeType.PROVIDES: 0.7,
    EdgeType.SEQUENCE: 0.5,
}
SOURCE_WEIGHTS = {EdgeSource.OBSERVED: 1.0, EdgeSource.INFERRED: 0.7, EdgeSource.TEMPLATE: 0.5}
_SOURCE_RANK = {EdgeSource.TEMPLATE: 0, EdgeSource.INFERRED: 1, EdgeSource.OBSERVED: 2}
PROMOTION_COUNT = 3
PAGERANK_DAMPING = 0.85
_PAGERANK_ROUNDS = 100
_PAGERANK_TOLERANCE = 1e-10


EdgeKey = tuple[str, str, EdgeType]
"""(from node, to node, type): what identifies an edge."""


@dataclass(frozen=True, slots=True)
class EdgeFacts:
    """What an edge and each sighting of it state: the nodes it joins, its type, and how it is
    known."""

    from_node: str
    to_node: str
    type: EdgeType
    source: EdgeSource

    @property
    def key(self) -> EdgeKey:
        return (self.from_node, self.to_node, self.type)


@dataclass(frozen=True, slots=True)
class Edge(EdgeFacts):
    count: int
    """Sightings in traces; declarations (config, schemas) do not count."""
    updated_at: datetime
    confidence: float | None = None
    coverage: str | None = None
    """Provides edges: `strict`, `partial` or `optional`."""

    @property
    def weight(self) -> float:
        return TYPE_WEIGHTS[self.type] * SOURCE_WEIGHTS[self.source]


@dataclass(frozen=True, slots=True)
class EdgeSighting(EdgeFacts):
    """One piece of evidence for an edge."""

    counted: bool
    """True for a trace sighting (adds one to the count); False for a declaration."""
    confidence: float | None = None
    coverage: str | None = None


def retractable(
    edge: Edge, edge_type: EdgeType, into: Collection[str], keep: Collection[EdgeKey]
) -> bool:
    """Whether `GraphRepository.retract` deletes `edge` (see there)."""
    return (
        edge.type is edge_type and edge.to_node in into and edge.count == 0 and edge.key not in keep
    )


def sighted(existing: Edge | None, sighting: EdgeSighting, now: datetime) -> Edge:
    """The edge after one more sighting: counts add up, the source only ever rises, and the
    third counted sighting makes it `observed`."""
    if existing is None:
        existing = Edge(
            sighting.from_node, sighting.to_node, sighting.type, sighting.source, 0, now
        )
    count = existing.count + (1 if sighting.counted else 0)
    source = max(existing.source, sighting.source, key=_SOURCE_RANK.__getitem__)
    if count >= PROMOTION_COUNT:
        source = EdgeSource.OBSERVED
    return replace(
        existing,
        source=source,
        count=count,
        updated_at=now,
        confidence=sighting.confidence if sighting.confidence is not None else existing.confidence,
        coverage=sighting.coverage if sighting.coverage is not None else existing.coverage,
    )


def touches_job(edge: Edge, job: str) -> bool:
    """Whether either end of `edge` is `job` or one of its endpoints."""
    return any(node == job or node.startswith(f"{job}/") for node in (edge.from_node, edge.to_node))


def endpoint_ref(job: str, endpoint: str) -> str:
    return f"{job}/{endpoint}"


def declared_sightings(job: str, dependencies: Mapping[str, Sequence[str]]) -> list[EdgeSighting]:
    """Config edges of one job: the job contains each endpoint; each upstream → dependant."""
    sightings = []
    for name, upstreams in dependencies.items():
        ref = endpoint_ref(job, name)
        sightings.append(
            EdgeSighting(job, ref, EdgeType.CONTAINS, EdgeSource.TEMPLATE, counted=False)
        )
        sightings += [
            EdgeSighting(
                endpoint_ref(job, up), ref, EdgeType.DEPENDENCY, EdgeSource.TEMPLATE, False
            )
            for up in upstreams
        ]
    return sightings


def trace_sightings(parent: str, child: str, previous_sibling: str | None) -> list[EdgeSighting]:
    """What one run triggered by another shows: its parent → it, and `sequence` from the
    sibling (same parent) that started just before it. Never from mere finishing order."""
    sightings = [EdgeSighting(parent, child, EdgeType.DEPENDENCY, EdgeSource.INFERRED, True)]
    if previous_sibling is not None:
        sightings.append(
            EdgeSighting(previous_sibling, child, EdgeType.SEQUENCE, EdgeSource.INFERRED, True)
        )
    return sightings


# --- maths --------------------------------------------------------------------------------


def dependency_graph(dependencies: Mapping[str, Iterable[str]]) -> Any:
    """upstream → dependant, every named node present."""
    import networkx as nx

    graph = nx.DiGraph()
    graph.add_nodes_from(dependencies)
    graph.add_edges_from((up, node) for node, ups in dependencies.items() for up in ups)
    return graph


def find_cycle(dependencies: Mapping[str, Iterable[str]]) -> list[str] | None:
    """The nodes of one dependency cycle in order (a self-dependency is a cycle of one)."""
    import networkx as nx

    try:
        edges = nx.find_cycle(dependency_graph(dependencies))
    except nx.NetworkXNoCycle:
        return None
    return [str(edge[0]) for edge in edges]


def generations(dependencies: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Layers that can run in parallel, upstreams first. Raises on a cycle (check first)."""
    import networkx as nx

    layers = nx.topological_generations(dependency_graph(dependencies))
    return [sorted(str(node) for node in layer) for layer in layers]


def _weighted(edges: Iterable[Edge]) -> Any:
    """A directed graph with, per pair, the strongest edge's weight and cost 1/weight."""
    import networkx as nx

    graph = nx.DiGraph()
    for edge in edges:
        data = graph.get_edge_data(edge.from_node, edge.to_node)
        if data is None or edge.weight > data["weight"]:
            graph.add_edge(edge.from_node, edge.to_node, weight=edge.weight, cost=1 / edge.weight)
    return graph


def shortest_path(edges: Iterable[Edge], source: str, target: str) -> list[str] | None:
    """The cheapest path where an edge costs 1/weight: strong edges make short paths."""
    import networkx as nx

    graph = _weighted(edges)
    try:
        path = nx.shortest_path(graph, source, target, weight="cost")
    except (nx.NetworkXNoPath, nx.NodeNotFound):
        return None
    return [str(node) for node in path]


def adamic_adar(edges: Iterable[Edge], node: str, others: Iterable[str]) -> dict[str, float]:
    """Adamic-Adar index of `node` with each of `others` on the undirected view (self-loops
    dropped: a node is not its own neighbour for this measure)."""
    import networkx as nx

    graph = _weighted(edges).to_undirected()
    graph.remove_edges_from(list(nx.selfloop_edges(graph)))
    candidates = [other for other in others if other != node]
    graph.add_nodes_from([node, *candidates])
    pairs = nx.adamic_adar_index(graph, [(node, other) for other in candidates])
    return {str(other): float(score) for _, other, score in pairs}


def related(edges: Sequence[Edge], node: str, others: Iterable[str]) -> list[str]:
    """`others` most related to `node` first: by the weight of the edges joining them directly
    (either direction, all types), then by Adamic-Adar through shared neighbours (a direct
    link says more than a common neighbour), then by name."""
    others = sorted(set(others) - {node})
    direct = dict.fromkeys(others, 0.0)
    for edge in edges:
        if edge.from_node == node and edge.to_node in direct:
            direct[edge.to_node] += edge.weight
        elif edge.to_node == node and edge.from_node in direct:
            direct[edge.from_node] += edge.weight
    shared = adamic_adar(edges, node, others)
    return sorted(others, key=lambda other: (-direct[other], -shared[other], other))


def pagerank(edges: Iterable[Edge]) -> dict[str, float]:
    """Weighted PageRank by power iteration on the networkx graph (networkx's own `pagerank`
    needs SciPy, which cronpilot does not otherwise need). Dangling nodes spread evenly."""
    graph = _weighted(edges)
    nodes = [str(n) for n in graph.nodes]
    if not nodes:
        return {}
    share = 1.0 / len(nodes)
    rank = dict.fromkeys(nodes, share)
    out_weight = {n: float(graph.out_degree(n, weight="weight")) for n in nodes}
    for _ in range(_PAGERANK_ROUNDS):
        dangling = sum(rank[n] for n in nodes if out_weight[n] == 0)
        fresh = dict.fromkeys(nodes, (1 - PAGERANK_DAMPING + PAGERANK_DAMPING * dangling) * share)
        for source, target, data in graph.edges(data=True):
            flow = rank[source] * cast(float, data["weight"]) / out_weight[source]
            fresh[target] += PAGERANK_DAMPING * flow
        done = sum(abs(fresh[n] - rank[n]) for n in nodes) < _PAGERANK_TOLERANCE
        rank = fresh
        if done:
            break
    return rank
