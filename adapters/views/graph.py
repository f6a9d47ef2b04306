"""The tool graph as the CLI's `--json` and the API show it, and as Graphviz dot: one shape
for both, so that a script reads the same keys from either."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from cronpilot.domain.graph.graph import Edge
from cronpilot.usecases.queries.graph import JobGraph, Suggestion


def edge_view(edge: Edge) -> dict[str, Any]:
    return {
        "from": edge.from_node,
        "to": edge.to_node,
        "type": edge.type.value,
        "source": edge.source.value,
        "weight": round(edge.weight, 3),
        "count": edge.count,
        "confidence": edge.confidence,
        "coverage": edge.coverage,
    }


def job_graphs_view(graphs: Mapping[str, JobGraph]) -> dict[str, Any]:
    """Per job: nodes, DAG layers, Louvain communities and edges."""
    return {
        name: {
            "nodes": graph.nodes,
            "layers": graph.layers,
            "communities": graph.communities,
            "edges": [edge_view(e) for e in graph.edges],
        }
        for name, graph in graphs.items()
    }


def suggestion_view(suggestion: Suggestion) -> dict[str, Any]:
    edge = suggestion.edge
    return {
        "job": suggestion.job,
        "from": edge.provider,
        "to": edge.consumer,
        "coverage": edge.coverage.value,
        "confidence": edge.confidence,
        "fields": [
            {
                "output": ".".join(m.output.path),
                "input": m.input.where,
                "how": m.how,
                **({"similarity": m.similarity} if m.similarity is not None else {}),
            }
            for m in edge.matches
        ],
    }


def merged(graphs: Mapping[str, JobGraph]) -> tuple[list[str], list[Edge]]:
    """Every node once, sorted, and every edge once (an edge between two jobs is in both)."""
    nodes = sorted({n for graph in graphs.values() for n in graph.nodes})
    unique = {e.key: e for graph in graphs.values() for e in graph.edges}
    return nodes, sorted(unique.values(), key=lambda e: e.key)


def graph_json(graphs: Mapping[str, JobGraph]) -> dict[str, Any]:
    nodes, edges = merged(graphs)
    return {"nodes": nodes, "edges": [edge_view(e) for e in edges]}


def graph_dot(graphs: Mapping[str, JobGraph]) -> str:
    """Graphviz: `dot -Tsvg`. Learnt kinds of edge (provides, sequence) are dashed."""
    nodes, edges = merged(graphs)
    lines = ["digraph cronpilot {"]
    lines += [f"  {json.dumps(node)};" for node in nodes]
    for edge in edges:
        label = json.dumps(f"{edge.type.value} {edge.source.value} x{edge.count}")
        style = "dashed" if edge.type.value in ("provides", "sequence") else "solid"
        lines.append(
            f"  {json.dumps(edge.from_node)} -> {json.dumps(edge.to_node)} "
            f"[label={label}, weight={edge.weight:.2f}, style={style}];"
        )
    lines.append("}")
    return "\n".join(lines)
