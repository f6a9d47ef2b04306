"""`cronpilot graph …`: the tool graph: which endpoints feed which, declared and learnt."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from cronpilot.adapters.cli import completion
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
from cronpilot.adapters.settings import Settings
from cronpilot.adapters.views.graph import (
    edge_view,
    graph_dot,
    graph_json,
    job_graphs_view,
    suggestion_view,
)
from cronpilot.domain.errors import PathNotFound
from cronpilot.domain.graph.graph import pagerank
from cronpilot.domain.ports import Embedder
from cronpilot.usecases.queries.graph import graph_path, job_graphs, suggestions

JobOption = Annotated[
    str | None, typer.Option("--job", help="Only this job.", autocompletion=completion.job_names)
]
Node = Annotated[
    str,
    typer.Argument(help="A node: `job` or `job/endpoint`.", autocompletion=completion.graph_nodes),
]


class ExportFormat(StrEnum):
    DOT = "dot"
    JSON = "json"


def show(job: JobOption = None, output: OutputOption = None) -> None:
    """Per job: nodes (with PageRank), DAG layers, and edges with type, source, weight, count."""
    graphs = with_store(admin_settings(), lambda store: job_graphs(store.reading, job))
    if output:
        print_data(output, job_graphs_view(graphs))
        return
    if not graphs:
        note("no jobs yet; declare some with: cronpilot apply -f jobs.yaml")
    for name, graph in graphs.items():
        ranks = pagerank(graph.edges)
        nodes = ", ".join(f"{n} ({ranks.get(n, 0):.2f})" for n in graph.nodes)
        print_text(f"job {name}: {nodes}")
        print_text("layers: " + " | ".join(", ".join(layer) for layer in graph.layers))
        print_text(
            "communities: "
            + " | ".join(f"{n}: {', '.join(group)}" for n, group in enumerate(graph.communities, 1))
        )
        edges = graph.edges
        table = new_table("From", "To", "Type", "Source", "Weight", "Count", "Coverage")
        for edge in edges:
            view = edge_view(edge)
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


def suggest(
    job: JobOption = None,
    intent: Annotated[
        str | None,
        typer.Option(
            "--intent",
            help="Describe a pipeline in words: get a DAG of existing endpoints for it, as a "
            "jobs file fragment (never applied).",
        ),
    ] = None,
    output: OutputOption = None,
) -> None:
    """Endpoints whose outputs could feed others that do not depend on them yet (by field name,
    and by meaning with a lower confidence); with --intent, a DAG of existing endpoints."""
    from cronpilot.adapters.bootstrap import build_embedder

    settings = admin_settings()
    embedder = build_embedder(settings)
    if intent is not None:
        _suggest_dag(settings, embedder, intent, job, output)
        return
    found = with_store(settings, lambda store: suggestions(store.reading, job, embedder))
    views = [suggestion_view(s) for s in found]
    if output:
        print_data(output, views)
        return
    if not views:
        note("nothing to suggest: no learnt output fills an input that is not declared already")
        return
    table = new_table("Job", "From", "To", "Coverage", "Confidence", "Fields", wrap=("Fields",))
    for name, edge in ((s.job, s.edge) for s in found):
        fields = ", ".join(
            f"{'.'.join(m.output.path)} → {m.input.where} ({m.how}"
            + (f" {m.similarity:.2f})" if m.similarity is not None else ")")
            for m in edge.matches
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


def _suggest_dag(
    settings: Settings,
    embedder: Embedder,
    intent: str,
    job: str | None,
    output: OutputFormat | None,
) -> None:
    from cronpilot.adapters.jobs_export import export_document
    from cronpilot.domain.search.search import checked_query
    from cronpilot.usecases.dag_suggestion import suggest_dag

    checked_query(intent)
    found = with_store(settings, lambda store: suggest_dag(store.reading, embedder, intent, job))
    if found is None:
        note("no endpoint matches the intent; try other words")
        return
    for remark in found.found.notes:
        note(remark)
    edges = [
        {
            "from": e.upstream,
            "to": e.dependant,
            "type": e.kind.value,
            "confidence": e.confidence,
        }
        for e in found.edges
    ]
    refused = [
        {"from": e.upstream, "to": e.dependant, "cycle": cycle} for e, cycle in found.refused
    ]
    document = export_document([found.declaration], with_secrets=False)
    if output:
        print_data(
            output,
            {"job": found.job, "edges": edges, "refused": refused, "jobs_file": document},
        )
        return
    lines = [
        f"# A DAG suggested for: {intent}",
        "# Never applied: review it, then `cronpilot apply -f FILE` (try --dry-run first).",
    ]
    lines += [
        f"# {e['from']} -> {e['to']}: {e['type']}, confidence {e['confidence']:.2f}" for e in edges
    ]
    lines += [
        f"# refused {r['from']} -> {r['to']}: it would close a cycle ({' -> '.join(r['cycle'])})"
        for r in refused
    ]
    typer.echo("\n".join(lines))
    typer.echo(document, nl=False)


def path(
    source: Node,
    target: Node,
    output: OutputOption = None,
) -> None:
    """The strongest chain of edges from one node to another (each edge costs 1/weight); exits
    1 when there is none."""
    found = with_store(admin_settings(), lambda store: graph_path(store.reading, source, target))
    if found is None:
        raise PathNotFound(source, target)
    if output:
        print_data(output, found)
        return
    typer.echo(" -> ".join(found))


def export(
    format_: Annotated[
        ExportFormat, typer.Option("--format", help="Graphviz dot or JSON.")
    ] = ExportFormat.DOT,
    job: JobOption = None,
) -> None:
    """The graph in a form other tools read: `dot -Tsvg` or any JSON reader."""
    graphs = with_store(admin_settings(), lambda store: job_graphs(store.reading, job))
    if format_ is ExportFormat.JSON:
        print_data(OutputFormat.JSON, graph_json(graphs))
        return
    typer.echo(graph_dot(graphs))
