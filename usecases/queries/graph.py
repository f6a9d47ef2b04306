"""The tool graph: per job its nodes, edges and DAG layers; provides edges not declared yet;
the strongest path between two nodes."""

from __future__ import annotations

from dataclasses import dataclass, field

from cronpilot.domain.graph import Edge, find_cycle, generations, shortest_path
from cronpilot.domain.model import Job
from cronpilot.domain.ports import ReadingFactory, Repositories
from cronpilot.domain.provides import ProvidesEdge, provides_edges
from cronpilot.domain.search import communities
from cronpilot.domain.templates import input_fields
from cronpilot.usecases.graph_edges import learnt_shapes


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


async def _jobs(read: Repositories, job: str | None) -> list[Job]:
    """The one job asked for (raises `JobNotFound`), or all of them."""
    return [await read.catalog.get_job(job)] if job else await read.catalog.list_jobs()


async def job_graphs(reading: ReadingFactory, job: str | None = None) -> dict[str, JobGraph]:
    """By job name: one job's (raises `JobNotFound`) or every job's."""
    found = {}
    async with reading() as read:
        for each in await _jobs(read, job):
            endpoints = await read.catalog.list_endpoints(each.name)
            dependencies = {
                e.ref: [f"{each.name}/{up}" for up in e.spec.depends_on] for e in endpoints
            }
            edges = await read.graph.list_edges(each.name)
            refs = [e.ref for e in endpoints]
            inside = [e for e in edges if e.from_node in refs and e.to_node in refs]
            found[each.name] = JobGraph(
                [each.name, *refs],
                edges,
                generations(dependencies),
                communities(inside, refs),
            )
    return found


async def suggestions(reading: ReadingFactory, job: str | None = None) -> list[Suggestion]:
    """Provides edges, from the schemas learnt now, that no `depends_on` declares yet and
    that would close no cycle if declared."""
    found = []
    async with reading() as read:
        for each in await _jobs(read, job):
            endpoints = {e.name: e for e in await read.catalog.list_endpoints(each.name)}
            shapes = await learnt_shapes(read, list(endpoints.values()))
            inputs = {name: input_fields(e.spec) for name, e in endpoints.items()}
            declared = {name: list(e.spec.depends_on) for name, e in endpoints.items()}
            found += [
                Suggestion(each.name, edge)
                for edge in provides_edges(shapes, inputs)
                if edge.provider not in declared[edge.consumer]
                # A provider downstream of its consumer: declaring it would close a cycle.
                and find_cycle(
                    {**declared, edge.consumer: [*declared[edge.consumer], edge.provider]}
                )
                is None
            ]
    return found


async def graph_path(reading: ReadingFactory, source: str, target: str) -> list[str] | None:
    """The strongest chain of edges from `source` to `target` (`job` or `job/endpoint`; each
    edge costs 1/weight), None when there is none. Raises `JobNotFound`/`EndpointNotFound`."""
    async with reading() as read:
        for node in (source, target):
            if "/" in node:
                await read.catalog.get_endpoint(node)
            else:
                await read.catalog.get_job(node)
        edges = await read.graph.list_edges()
    return shortest_path(edges, source, target)
