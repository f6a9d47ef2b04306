"""The tool graph: per job, suggestions, paths, and an export for other tools."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import PlainTextResponse

from cronpilot.adapters.api.access import Reader
from cronpilot.adapters.views.graph import graph_dot, graph_json, job_graphs_view, suggestion_view
from cronpilot.adapters.web.context import Context
from cronpilot.usecases.queries.graph import graph_path, job_graphs, suggestions

router = APIRouter(prefix="/graph", tags=["graph"])

JobFilter = Annotated[str | None, Query(description="Only this job.")]


class ExportFormat(StrEnum):
    DOT = "dot"
    JSON = "json"


@router.get("")
async def show(ctx: Context, who: Reader, job: JobFilter = None) -> dict[str, Any]:
    """Per job: nodes, DAG layers and edges with type, source, weight and count."""
    return job_graphs_view(await job_graphs(ctx.store.reading, job, reach=who.reach))


@router.get("/suggest")
async def suggest(ctx: Context, who: Reader, job: JobFilter = None) -> dict[str, Any]:
    """Endpoints whose outputs could feed others that do not depend on them yet."""
    found = await suggestions(ctx.store.reading, job, ctx.embedder, reach=who.reach)
    return {"items": [suggestion_view(s) for s in found]}


@router.get("/path")
async def path(
    ctx: Context,
    who: Reader,
    source: Annotated[str, Query(alias="from", description="`job` or `job/endpoint`")],
    target: Annotated[str, Query(alias="to", description="`job` or `job/endpoint`")],
) -> dict[str, Any]:
    """The strongest chain of edges between two nodes; `path` is null when there is none."""
    return {"path": await graph_path(ctx.store.reading, source, target, reach=who.reach)}


@router.get("/export", response_model=None)
async def export(
    ctx: Context, who: Reader, job: JobFilter = None, format: ExportFormat = ExportFormat.DOT
) -> Any:
    """Graphviz dot (`text/vnd.graphviz`) or JSON."""
    graphs = await job_graphs(ctx.store.reading, job, reach=who.reach)
    if format is ExportFormat.JSON:
        return graph_json(graphs)
    return PlainTextResponse(graph_dot(graphs), media_type="text/vnd.graphviz")
