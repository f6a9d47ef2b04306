"""The tool graph drawn with Cytoscape.js (vendored in the wheel): colour is the edge's type,
line style its source, width its weight; a column per DAG layer, the job before them; a click
on a node opens its endpoint."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response

from cronpilot.adapters.api.context import Context
from cronpilot.adapters.console.pages import PREFIX, ConsoleRoute, SignedIn, render
from cronpilot.adapters.graph_views import edge_view, merged
from cronpilot.usecases.queries.catalog import list_jobs
from cronpilot.usecases.queries.graph import JobGraph, job_graphs

router = APIRouter(prefix=PREFIX, route_class=ConsoleRoute, include_in_schema=False)

COLUMN = 200
ROW = 60
BAND_GAP = 30


def _node(
    node: str, x: float, y: float, layer: int | None, community: int | None = None
) -> dict[str, Any]:
    job, _, name = node.partition("/")
    href = f"{PREFIX}/endpoints/{node}" if name else f"{PREFIX}/endpoints?job={job}"
    data: dict[str, Any] = {
        "id": node,
        "label": name or job,
        "kind": "endpoint" if name else "job",
        "href": href,
    }
    if layer is not None:
        data["layer"] = layer
    if community is not None:
        data["community"] = community
    return {"group": "nodes", "data": data, "position": {"x": x, "y": y}}


def elements(graphs: Mapping[str, JobGraph]) -> list[dict[str, Any]]:
    """Cytoscape's elements with their positions: per job a band, the job at its left and its
    endpoints in a column per DAG layer; a node of another job that an edge reaches sits in a
    last column. Labels above the columns name the layers."""
    placed: list[dict[str, Any]] = []
    top = 0.0
    deepest = 0
    for name in sorted(graphs):
        layers = graphs[name].layers or [[]]
        groups = graphs[name].communities
        # Only groups of several endpoints are drawn as such: a lone endpoint is no group.
        community = {n: i for i, g in enumerate(groups, 1) if len(g) > 1 for n in g}
        height = max(len(layer) for layer in layers) * ROW or ROW
        placed.append(_node(name, 0, top + height / 2, None))
        for depth, layer in enumerate(layers, 1):
            for index, node in enumerate(sorted(layer)):
                y = top + (index + 0.5) * height / len(layer)
                placed.append(_node(node, depth * COLUMN, y, depth, community.get(node)))
        deepest = max(deepest, len(layers))
        top += height + BAND_GAP
    nodes, edges = merged(graphs)
    known = {e["data"]["id"] for e in placed}
    strays = [
        n for n in nodes + [x for e in edges for x in (e.from_node, e.to_node)] if n not in known
    ]
    for index, node in enumerate(dict.fromkeys(strays)):
        placed.append(_node(node, (deepest + 1) * COLUMN, index * ROW, None))
    headers = [
        {
            "group": "nodes",
            "data": {"id": f"layer {depth}", "label": f"DAG layer {depth}", "kind": "layer"},
            "position": {"x": depth * COLUMN, "y": -ROW / 1.5},
            "selectable": False,
            "grabbable": False,
        }
        for depth in range(1, deepest + 1)
    ]
    links = [
        {
            "group": "edges",
            "data": {
                "id": f"{e.from_node}->{e.to_node}:{e.type.value}",
                "source": e.from_node,
                "target": e.to_node,
                "type": e.type.value,
                # Cytoscape's `source` is the edge's tail: the edge's source is its origin here.
                "origin": e.source.value,
                "weight": round(e.weight, 3),
                "count": e.count,
            },
        }
        for e in edges
    ]
    return headers + placed + links


@router.get("/graph")
async def graph(
    request: Request, ctx: Context, who: SignedIn, job: Annotated[str | None, Query()] = None
) -> Response:
    graphs = await job_graphs(ctx.store.reading, job or None)
    _, edges = merged(graphs)
    return render(
        request,
        "graph.html",
        who,
        ctx.clock.now(),
        elements=elements(graphs),
        edges=[edge_view(e) for e in edges],
        graphs=graphs,
        jobs=[j.job.name for j in await list_jobs(ctx.store.reading)],
        job=job or "",
    )
