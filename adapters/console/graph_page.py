"""The tool graph drawn with Cytoscape.js (vendored in the wheel): colour is the edge's type,
line style its source, width its weight; each job in a box of its own, a column per DAG layer,
the job before them, the boxes packed to fill a wide screen at a readable size; a click on a
node opens its endpoint."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Query, Request, Response

from cronpilot.adapters.console.pages import PREFIX, SignedIn, console_router, render
from cronpilot.adapters.views.graph import edge_view, merged
from cronpilot.adapters.web.context import Context
from cronpilot.usecases.queries.catalog import list_jobs
from cronpilot.usecases.queries.graph import JobGraph, job_graphs

router = console_router()

COLUMN = 140
ROW = 46
BAND_GAP = 30
TILE_PAD = 36
"""Room round a job's tile for the labels of its outer nodes and its box's border."""
RUN = 12
ASPECT = 2.0
"""Width over height of the drawing's box at 1280×800 (about 1200 × 600): the tiles are
packed to fill it, so that it is fitted at a zoom that keeps every label readable."""


def _node(
    node: str,
    x: float,
    y: float,
    layer: int | None,
    community: int | None = None,
    *,
    parent: str | None = None,
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
    if parent is not None:
        data["parent"] = parent
    return {"group": "nodes", "data": data, "position": {"x": x, "y": y}}


@dataclass(frozen=True, slots=True)
class Tile:
    """A job drawn on its own: the job at its left, a column per DAG layer; positions from the
    tile's top left corner."""

    name: str
    width: float
    height: float
    nodes: list[tuple[str, float, float, int | None, int | None]]


def _tile(name: str, graph: JobGraph) -> Tile:
    layers = graph.layers or [[]]
    # Only groups of several endpoints are drawn as such: a lone endpoint is no group.
    community = {n: i for i, g in enumerate(graph.communities, 1) if len(g) > 1 for n in g}
    height = max(len(layer) for layer in layers) * ROW or ROW
    nodes: list[tuple[str, float, float, int | None, int | None]] = [
        (name, TILE_PAD, TILE_PAD + height / 2, None, None)
    ]
    for depth, layer in enumerate(layers, 1):
        for index, node in enumerate(sorted(layer)):
            y = TILE_PAD + (index + 0.5) * height / len(layer)
            nodes.append((node, TILE_PAD + depth * COLUMN, y, depth, community.get(node)))
    return Tile(name, len(layers) * COLUMN + 2 * TILE_PAD, height + 2 * TILE_PAD, nodes)


def _shelves(tiles: list[Tile], width: float) -> tuple[list[tuple[Tile, float, float]], float]:
    """`tiles` in rows no wider than `width` (a tile wider starts a row of its own), the
    tallest first: each tile's top left corner, and the total height."""
    placed: list[tuple[Tile, float, float]] = []
    x = y = shelf = 0.0
    for tile in sorted(tiles, key=lambda t: (-t.height, t.name)):
        if x > 0 and x + tile.width > width:
            x, y, shelf = 0.0, y + shelf + BAND_GAP, 0.0
        placed.append((tile, x, y))
        x += tile.width + BAND_GAP
        shelf = max(shelf, tile.height)
    return placed, y + shelf


def pack(tiles: list[Tile]) -> list[tuple[Tile, float, float]]:
    """The rows of tiles that a box `ASPECT` times wider than high shows largest: of the
    widths that break the rows differently, the one whose drawing needs the least zoom out."""
    if not tiles:
        return []
    # A row's width is that of a run of tiles in the shelf order: those of up to `RUN` tiles
    # (a screen holds no more side by side) are the widths worth trying.
    ordered = sorted(tiles, key=lambda t: (-t.height, t.name))
    widths = {max(t.width for t in tiles)}
    for start in range(len(ordered)):
        for end in range(start + 1, min(start + RUN, len(ordered)) + 1):
            widths.add(sum(t.width + BAND_GAP for t in ordered[start:end]) - BAND_GAP)

    def scale(width: float) -> float:
        placed, height = _shelves(tiles, width)
        used = max(x + tile.width for tile, x, _ in placed)
        return max(used, height * ASPECT)

    return _shelves(tiles, min(sorted(widths), key=scale))[0]


def elements(graphs: Mapping[str, JobGraph]) -> list[dict[str, Any]]:
    """Cytoscape's elements with their positions: each job a tile in a box of its own (a
    compound node), the job at its left and its endpoints in a column per DAG layer; the
    tiles packed in rows to fill a wide screen. A node of another job that an edge reaches
    sits in a last column. With one job, labels above the columns name the layers."""
    placed: list[dict[str, Any]] = []
    right = 0.0
    for tile, left, top in pack([_tile(name, graphs[name]) for name in sorted(graphs)]):
        box = f"job-box:{tile.name}"
        placed.append(
            {
                "group": "nodes",
                "data": {"id": box, "kind": "box"},
                "selectable": False,
                "grabbable": False,
            }
        )
        for node, x, y, layer, community in tile.nodes:
            placed.append(_node(node, left + x, top + y, layer, community, parent=box))
        right = max(right, left + tile.width)
    nodes, edges = merged(graphs)
    known = {e["data"]["id"] for e in placed}
    strays = [
        n for n in nodes + [x for e in edges for x in (e.from_node, e.to_node)] if n not in known
    ]
    for index, node in enumerate(dict.fromkeys(strays)):
        placed.append(_node(node, right + COLUMN / 2, TILE_PAD + index * ROW, None))
    headers = []
    if len(graphs) == 1:
        [only] = graphs.values()
        headers = [
            {
                "group": "nodes",
                "data": {"id": f"layer {depth}", "label": f"DAG layer {depth}", "kind": "layer"},
                "position": {"x": TILE_PAD + depth * COLUMN, "y": 0},
                "selectable": False,
                "grabbable": False,
            }
            for depth in range(1, len(only.layers) + 1)
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
    graphs = await job_graphs(ctx.store.reading, job, reach=who.reach)
    _, edges = merged(graphs)
    return render(
        request,
        "graph.html",
        who,
        ctx.clock.now(),
        elements=elements(graphs),
        edges=[edge_view(e) for e in edges],
        graphs=graphs,
        jobs=[j.job.name for j in await list_jobs(ctx.store.reading, reach=who.reach)],
        job=job or "",
    )
