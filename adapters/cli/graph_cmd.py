"""`cronpilot graph …`: the tool graph: which endpoints feed which, declared and learnt."""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated

import typer

from cronpilot.adapters.cli.output import (
    OutputFormat,
    OutputOption,
    add_row,
    new_table,
    note,
    print_data,
    print_table,
    print_text,
)
from cronpilot.adapters.cli.runtime import admin_settings, with_store
from cronpilot.domain.graph import Edge, find_cycle, generations, pagerank, shortest_path
from cronpilot.domain.model import Job
from cronpilot.domain.ports import Store
from cronpilot.domain.provides import ProvidesEdge, provides_edges
from cronpilot.domain.templates import input_fields
from cronpilot.usecases.graph_edges import learnt_shapes

JobOption = Annotated[str | None, typer.Option("--job", help="Only this job.")]


class ExportFormat(StrEnum):
    DOT = "dot"
    JSON = "json"


async def _jobs(store: Store, job: str | None) -> list[Job]:
    """The one job asked for (raises `JobNotFound`), or all of them."""
    return [await store.catalog.get_job(job)] if job else await store.catalog.list_jobs()


@dataclass(frozen=True, slots=True)
class JobGraph:
    nodes: list[str]
    """The job, then its endpoints."""
    edges: list[Edge]
    """Edges with an end in the job."""
    layers: list[list[str]]
    """The declared DAG's topological generations: each layer runs after the one before."""


async def _graphs(store: Store, job: str | None) -> dict[str, JobGraph]:
    found = {}
    for each in await _jobs(store, job):
        endpoints = await store.catalog.list_endpoints(each.name)
        dependencies = {e.ref: [f"{each.name}/{up}" for up in e.spec.depends_on] for e in endpoints}
        found[each.name] = JobGraph(
            [each.name, *(e.ref for e in endpoints)],
            await store.graph.list_edges(each.name),
            generations(dependencies),
        )
    return found


def _edge_view(edge: Edge) -> dict[str, object]:
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


def show(job: JobOption = None, output: OutputOption = None) -> None:
    """Per job: nodes (with PageRank), DAG layers, and edges with type, source, weight, count."""
    graphs = with_store(admin_settings(), lambda store: _graphs(store, job))
    if output:
        print_data(
            output,
            {
                name: {
                    "nodes": graph.nodes,
                    "layers": graph.layers,
                    "edges": [_edge_view(e) for e in graph.edges],
                }
                for name, graph in graphs.items()
            },
        )
        return
    if not graphs:
        note("no jobs yet; declare some with: cronpilot apply -f jobs.yaml")
    for name, graph in graphs.items():
        ranks = pagerank(graph.edges)
        nodes = ", ".join(f"{n} ({ranks.get(n, 0):.2f})" for n in graph.nodes)
        print_text(f"job {name}: {nodes}")
        print_text("layers: " + " | ".join(", ".join(layer) for layer in graph.layers))
        edges = graph.edges
        table = new_table("From", "To", "Type", "Source", "Weight", "Count", "Coverage")
        for edge in edges:
            view = _edge_view(edge)
            coverage = f"{edge.coverage} {edge.confidence:.2f}" if edge.coverage else "-"
            add_row(
                table,
                edge.from_node,
                edge.to_node,
                edge.type.value,
                edge.source.value,
                f"{view['weight']}",
                str(edge.count),
                coverage,
            )
        print_table(table)


async def _suggestions(store: Store, job: str | None) -> list[tuple[str, ProvidesEdge]]:
    """Provides edges, from the schemas learnt now, that no `depends_on` declares yet."""
    suggestions = []
    for each in await _jobs(store, job):
        endpoints = {e.name: e for e in await store.catalog.list_endpoints(each.name)}
        shapes = await learnt_shapes(store, list(endpoints.values()))
        inputs = {name: input_fields(e.spec) for name, e in endpoints.items()}
        declared = {name: list(e.spec.depends_on) for name, e in endpoints.items()}
        suggestions += [
            (each.name, edge)
            for edge in provides_edges(shapes, inputs)
            if edge.provider not in declared[edge.consumer]
            # A provider downstream of its consumer: declaring it would close a cycle.
            and find_cycle({**declared, edge.consumer: [*declared[edge.consumer], edge.provider]})
            is None
        ]
    return suggestions


def suggest(job: JobOption = None, output: OutputOption = None) -> None:
    """Endpoints whose outputs could feed others that do not depend on them yet."""
    suggestions = with_store(admin_settings(), lambda store: _suggestions(store, job))
    views = [
        {
            "job": name,
            "from": edge.provider,
            "to": edge.consumer,
            "coverage": edge.coverage.value,
            "confidence": edge.confidence,
            "fields": [
                {
                    "output": ".".join(m.output.path),
                    "input": m.input.where,
                    "how": m.how,
                }
                for m in edge.matches
            ],
        }
        for name, edge in suggestions
    ]
    if output:
        print_data(output, views)
        return
    if not views:
        note("nothing to suggest: no learnt output fills an input that is not declared already")
        return
    table = new_table("Job", "From", "To", "Coverage", "Confidence", "Fields", wrap=("Fields",))
    for name, edge in suggestions:
        fields = ", ".join(
            f"{'.'.join(m.output.path)} → {m.input.where} ({m.how})" for m in edge.matches
        )
        add_row(
            table,
            name,
            edge.provider,
            edge.consumer,
            edge.coverage.value,
            f"{edge.confidence:.2f}",
            fields,
        )
    print_table(table)


async def _edges_between(store: Store, *nodes: str) -> list[Edge]:
    """Every edge, once each node is known to exist (raises `JobNotFound`/`EndpointNotFound`)."""
    for node in nodes:
        if "/" in node:
            await store.catalog.get_endpoint(node)
        else:
            await store.catalog.get_job(node)
    return await store.graph.list_edges()


def path(
    source: Annotated[str, typer.Argument(help="A node: `job` or `job/endpoint`.")],
    target: Annotated[str, typer.Argument(help="A node: `job` or `job/endpoint`.")],
    output: OutputOption = None,
) -> None:
    """The strongest chain of edges from one node to another (each edge costs 1/weight)."""
    edges = with_store(admin_settings(), lambda store: _edges_between(store, source, target))
    found = shortest_path(edges, source, target)
    if output:
        print_data(output, found)
        return
    if found is None:
        note(f"no path from {source} to {target}")
        return
    typer.echo(" -> ".join(found))


def export(
    format_: Annotated[
        ExportFormat, typer.Option("--format", help="Graphviz dot or JSON.")
    ] = ExportFormat.DOT,
    job: JobOption = None,
) -> None:
    """The graph in a form other tools read: `dot -Tsvg` or any JSON reader."""
    graphs = with_store(admin_settings(), lambda store: _graphs(store, job))
    nodes = sorted({n for graph in graphs.values() for n in graph.nodes})
    unique = {e.key: e for graph in graphs.values() for e in graph.edges}
    edges = sorted(unique.values(), key=lambda e: e.key)
    if format_ is ExportFormat.JSON:
        print_data(OutputFormat.JSON, {"nodes": nodes, "edges": [_edge_view(e) for e in edges]})
        return
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
    typer.echo("\n".join(lines))
