"""The tool graph: weights, promotion, and the maths (cycles, generations, shortest path,
Adamic-Adar, PageRank), with properties over generated graphs."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cronpilot.domain.graph.graph import (
    Edge,
    EdgeSighting,
    EdgeSource,
    EdgeType,
    declared_sightings,
    find_cycle,
    generations,
    pagerank,
    related,
    shortest_path,
    sighted,
    trace_sightings,
)

T0 = datetime(2030, 1, 1, tzinfo=UTC)
NODES = [f"n{i}" for i in range(8)]


def _edge(
    a: str, b: str, kind: EdgeType = EdgeType.DEPENDENCY, source: EdgeSource = EdgeSource.OBSERVED
) -> Edge:
    return Edge(a, b, kind, source, 1, T0)


def test_weights_are_type_times_source() -> None:
    assert _edge("a", "b").weight == 1.0
    assert _edge("a", "b", EdgeType.PROVIDES, EdgeSource.INFERRED).weight == pytest.approx(0.49)
    assert _edge("a", "b", EdgeType.SEQUENCE, EdgeSource.TEMPLATE).weight == 0.25
    assert _edge("a", "b", EdgeType.CONTAINS).weight == 0.8


def test_the_third_counted_sighting_promotes_and_declarations_do_not_count() -> None:
    declared = EdgeSighting("a", "b", EdgeType.DEPENDENCY, EdgeSource.TEMPLATE, counted=False)
    seen = EdgeSighting("a", "b", EdgeType.DEPENDENCY, EdgeSource.INFERRED, counted=True)
    edge = sighted(None, declared, T0)
    assert (edge.source, edge.count) == (EdgeSource.TEMPLATE, 0)
    edge = sighted(sighted(edge, declared, T0), seen, T0)
    assert (edge.source, edge.count) == (EdgeSource.INFERRED, 1)
    edge = sighted(sighted(edge, seen, T0), seen, T0)
    assert (edge.source, edge.count) == (EdgeSource.OBSERVED, 3)
    assert sighted(edge, declared, T0).source is EdgeSource.OBSERVED


def test_config_and_trace_sightings() -> None:
    config = declared_sightings("etl", {"fetch": (), "load": ("fetch",)})
    assert {(s.from_node, s.to_node, s.type) for s in config} == {
        ("etl", "etl/fetch", EdgeType.CONTAINS),
        ("etl", "etl/load", EdgeType.CONTAINS),
        ("etl/fetch", "etl/load", EdgeType.DEPENDENCY),
    }
    assert not any(s.counted for s in config)
    traced = trace_sightings("etl/fetch", "etl/b", "etl/a")
    assert {(s.from_node, s.to_node, s.type, s.counted) for s in traced} == {
        ("etl/fetch", "etl/b", EdgeType.DEPENDENCY, True),
        ("etl/a", "etl/b", EdgeType.SEQUENCE, True),
    }


def test_a_cycle_is_found_and_named_in_order() -> None:
    assert find_cycle({"a": (), "b": ("a",), "c": ("b",)}) is None
    cycle = find_cycle({"a": ("c",), "b": ("a",), "c": ("b",), "d": ()})
    assert cycle is not None
    assert sorted(cycle) == ["a", "b", "c"]
    start = cycle.index("a")
    assert cycle[start:] + cycle[:start] == ["a", "b", "c"]
    assert find_cycle({"a": ("a",)}) == ["a"]


DAGS = st.lists(
    st.tuples(st.integers(0, 7), st.integers(0, 7)).filter(lambda p: p[0] < p[1]), max_size=20
).map(lambda pairs: {n: tuple(NODES[a] for a, b in pairs if NODES[b] == n) for n in NODES})


@settings(max_examples=200, deadline=None)
@given(DAGS)
def test_generations_put_every_upstream_in_an_earlier_layer(
    deps: dict[str, tuple[str, ...]],
) -> None:
    assert find_cycle(deps) is None
    layers = generations(deps)
    layer_of = {node: i for i, layer in enumerate(layers) for node in layer}
    assert sorted(layer_of) == NODES
    for node, ups in deps.items():
        for up in ups:
            assert layer_of[up] < layer_of[node]
    # Each node sits as early as its upstreams allow: independent nodes run together.
    for node, ups in deps.items():
        assert layer_of[node] == (max((layer_of[u] for u in ups), default=-1) + 1)


@settings(max_examples=200, deadline=None)
@given(DAGS, st.integers(0, 7), st.integers(0, 7))
def test_a_back_edge_on_a_path_makes_a_cycle(
    deps: dict[str, tuple[str, ...]], a: int, b: int
) -> None:
    edges = [
        Edge(u, n, EdgeType.DEPENDENCY, EdgeSource.OBSERVED, 1, T0)
        for n, ups in deps.items()
        for u in ups
    ]
    path = shortest_path(edges, NODES[a], NODES[b])
    if path is None or a == b:
        return
    looped = {**deps, NODES[a]: (*deps[NODES[a]], NODES[b])}
    cycle = find_cycle(looped)
    assert cycle is not None
    # The graph was acyclic, so any cycle uses the new edge; and it is a real cycle.
    assert {NODES[a], NODES[b]} <= set(cycle)
    for up, down in zip(cycle, [*cycle[1:], cycle[0]], strict=True):
        assert up in looped[down]


def test_shortest_path_prefers_strong_edges() -> None:
    edges = [
        _edge("a", "d", EdgeType.SEQUENCE, EdgeSource.TEMPLATE),  # cost 4
        _edge("a", "b"),  # cost 1
        _edge("b", "d"),  # cost 1
    ]
    assert shortest_path(edges, "a", "d") == ["a", "b", "d"]
    assert shortest_path(edges, "d", "a") is None
    assert shortest_path(edges, "a", "zz") is None


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(NODES), st.sampled_from(NODES), st.sampled_from(list(EdgeType))),
        max_size=25,
    )
)
def test_pagerank_is_a_distribution(triples: list[tuple[str, str, EdgeType]]) -> None:
    ranks = pagerank([_edge(a, b, kind) for a, b, kind in triples])
    if not triples:
        assert ranks == {}
        return
    assert sum(ranks.values()) == pytest.approx(1.0)
    assert all(rank > 0 for rank in ranks.values())


def test_pagerank_ranks_the_node_everything_feeds_highest() -> None:
    ranks = pagerank(
        [
            _edge("a", "hub"),
            _edge("b", "hub"),
            _edge("c", "hub"),
            _edge("hub", "a", EdgeType.SEQUENCE),
        ]
    )
    assert max(ranks, key=ranks.__getitem__) == "hub"


def test_related_orders_siblings_by_direct_weight_then_shared_neighbours() -> None:
    edges = [
        _edge("j/fetch", "j/load"),  # direct, weight 1
        _edge("j/fetch", "j/audit", EdgeType.SEQUENCE, EdgeSource.TEMPLATE),  # direct, 0.25
        _edge("j/fetch", "j/x", EdgeType.PROVIDES),
        _edge("j/report", "j/x", EdgeType.PROVIDES),  # shares neighbour x with fetch
        _edge("j/fetch", "j/fetch", EdgeType.SEQUENCE),  # a self-loop is no relation
    ]
    siblings = ["j/audit", "j/load", "j/report", "j/zebra", "j/fetch"]
    assert related(edges, "j/fetch", siblings) == ["j/load", "j/audit", "j/report", "j/zebra"]
