"""The tool graph: per job its nodes, edges and DAG layers; provides edges not declared yet;
the strongest path between two nodes."""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from cronpilot.domain.access.access import EVERY_JOB, Reach
from cronpilot.domain.errors import EmbedderUnavailable
from cronpilot.domain.graph.graph import Edge, find_cycle, generations, shortest_path
from cronpilot.domain.graph.provides import (
    ProvidesEdge,
    differing_words,
    meaning_edges,
    output_fields,
    provides_edges,
)
from cronpilot.domain.graph.schema_inference import ShapeNode
from cronpilot.domain.model import Job
from cronpilot.domain.ports import Embedder, ReadingFactory, Repositories
from cronpilot.domain.runs.templates import InputField, input_fields
from cronpilot.domain.search.search import communities
from cronpilot.usecases.graph_edges import learnt_shapes
from cronpilot.usecases.queries.reach import (
    reached_edges,
    reached_endpoint,
    reached_job,
    reached_jobs,
)


@dataclass(frozen=True, slots=True)
class JobGraph:
    nodes: list[str]
    """The job, then its endpoints."""
    edges: list[Edge]
    """Edges with an end in the job."""
    layers: list[list[str]]
    """The declared DAG's topological generations: each layer runs after the one before."""
    communities: list[list[str]] = field(default_factory=list)
    """Louvain communities of its endpoints (related tools, seed 003), largest first."""


@dataclass(frozen=True, slots=True)
class Suggestion:
    job: str
    edge: ProvidesEdge


async def _jobs(read: Repositories, job: str | None, reach: Reach) -> list[Job]:
    """The one job asked for (raises `JobNotFound`), or all of them in reach."""
    if job is not None:
        return [await reached_job(read, job, reach)]
    return await reached_jobs(read, reach)


async def job_graphs(
    reading: ReadingFactory, job: str | None = None, *, reach: Reach = EVERY_JOB
) -> dict[str, JobGraph]:
    """By job name: one job's (raises `JobNotFound`) or every job's in reach."""
    found = {}
    async with reading() as read:
        for each in await _jobs(read, job, reach):
            endpoints = await read.catalog.list_endpoints(each.name)
            dependencies = {
                e.ref: [f"{each.name}/{up}" for up in e.spec.depends_on] for e in endpoints
            }
            edges = await reached_edges(read, each.name, reach)
            refs = [e.ref for e in endpoints]
            inside = [e for e in edges if e.from_node in refs and e.to_node in refs]
            found[each.name] = JobGraph(
                [each.name, *refs],
                edges,
                generations(dependencies),
                communities(inside, refs),
            )
    return found


async def suggestions(
    reading: ReadingFactory,
    job: str | None = None,
    embedder: Embedder | None = None,
    *,
    reach: Reach = EVERY_JOB,
) -> list[Suggestion]:
    """Provides edges, from the schemas learnt now, that no `depends_on` declares yet and
    that would close no cycle if declared: by field name, and with an `embedder`, by meaning
    (lower confidence, the similarity shown) between endpoints no name match links. A model
    that cannot be reached leaves the matches by meaning out."""
    found = []
    async with reading() as read:
        jobs = await _jobs(read, job, reach)
        endpoints_of = {each.name: await read.catalog.list_endpoints(each.name) for each in jobs}
        shapes_of = {
            name: await learnt_shapes(read, endpoints) for name, endpoints in endpoints_of.items()
        }
    for name, listed in endpoints_of.items():
        endpoints = {e.name: e for e in listed}
        shapes = shapes_of[name]
        inputs = {n: input_fields(e.spec) for n, e in endpoints.items()}
        declared = {n: list(e.spec.depends_on) for n, e in endpoints.items()}
        by_name = provides_edges(shapes, inputs)
        edges = by_name + await _by_meaning(
            shapes, inputs, {(e.provider, e.consumer) for e in by_name}, embedder
        )
        found += [
            Suggestion(name, edge)
            for edge in edges
            if edge.provider not in declared[edge.consumer]
            # A provider downstream of its consumer: declaring it would close a cycle.
            and find_cycle({**declared, edge.consumer: [*declared[edge.consumer], edge.provider]})
            is None
        ]
    return found


async def _by_meaning(
    shapes: Mapping[str, ShapeNode],
    inputs: Mapping[str, Sequence[InputField]],
    skip: Collection[tuple[str, str]],
    embedder: Embedder | None,
) -> list[ProvidesEdge]:
    if embedder is None:
        return []
    names = {f.path[-1] for shape in shapes.values() for f in output_fields(shape)}
    wanted = {i.name for items in inputs.values() for i in items if i.placeholder is None}
    pairs = {p for n in names for w in wanted if (p := differing_words(n, w)) is not None}
    words = sorted({text for pair in pairs for text in pair})
    if not words:
        return []
    try:
        vectors = dict(zip(words, await embedder.embed(words), strict=True))
    except EmbedderUnavailable:
        return []
    similarity = {(a, b): _cosine(vectors[a], vectors[b]) for a, b in pairs}
    return meaning_edges(shapes, inputs, similarity, skip)


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    norms = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return sum(x * y for x, y in zip(a, b, strict=True)) / norms if norms else 0.0


async def graph_path(
    reading: ReadingFactory, source: str, target: str, *, reach: Reach = EVERY_JOB
) -> list[str] | None:
    """The strongest chain of edges from `source` to `target` (`job` or `job/endpoint`; each
    edge costs 1/weight) through nodes in reach, None when there is none. Raises
    `JobNotFound`/`EndpointNotFound`."""
    async with reading() as read:
        for node in (source, target):
            if "/" in node:
                await reached_endpoint(read, node, reach)
            else:
                await reached_job(read, node, reach)
        edges = await reached_edges(read, None, reach)
    return shortest_path(edges, source, target)
