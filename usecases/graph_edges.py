"""Use cases on the tool graph's learnt edges: provides edges refreshed from the learnt output
schemas, and the edges a DAG run's trace shows."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from cronpilot.domain.graph.graph import (
    EdgeSighting,
    EdgeSource,
    EdgeType,
    endpoint_ref,
    trace_sightings,
)
from cronpilot.domain.graph.provides import provides_edges
from cronpilot.domain.graph.schema_inference import ShapeNode
from cronpilot.domain.model import Endpoint, Run
from cronpilot.domain.ports import ReadingFactory, Repositories, UnitOfWorkFactory
from cronpilot.domain.runs.templates import input_fields


async def refresh_job_provides(uow: UnitOfWorkFactory, job: str, now: datetime) -> None:
    """Record the provides edges among the job's endpoints and retract those no longer found,
    in one unit of work (`refresh_provides`)."""
    async with uow() as tx:
        await refresh_provides(tx, job, now)
        await tx.commit()


async def refresh_provides(repositories: Repositories, job: str, now: datetime) -> None:
    """The step of a unit of work (`refresh_job_provides`, applying declarations) that records
    the provides edges among the job's endpoints from their learnt schemas and their inputs as
    declared now, and retracts those no longer found."""
    endpoints = await repositories.catalog.list_endpoints(job)
    inputs = {e.name: input_fields(e.spec) for e in endpoints}
    # Without an input in the job nothing can be provided for: the schemas need not be read.
    shapes = await learnt_shapes(repositories, endpoints) if any(inputs.values()) else {}
    sightings = [
        EdgeSighting(
            endpoint_ref(job, edge.provider),
            endpoint_ref(job, edge.consumer),
            EdgeType.PROVIDES,
            EdgeSource.INFERRED,
            counted=False,
            confidence=edge.confidence,
            coverage=edge.coverage.value,
        )
        for edge in provides_edges(shapes, inputs)
    ]
    await repositories.graph.record(sightings, now)
    await repositories.graph.retract(
        EdgeType.PROVIDES, {e.ref for e in endpoints}, {s.key for s in sightings}
    )


async def learnt_shapes(
    repositories: Repositories, endpoints: Sequence[Endpoint]
) -> dict[str, ShapeNode]:
    """The learnt output shapes of those `endpoints` that have stored a body, by name."""
    schemas = await repositories.schemas.get_output_schemas([e.id for e in endpoints])
    shapes = {}
    for endpoint in endpoints:
        schema = schemas.get(endpoint.id)
        if schema is not None and schema.observations:
            shapes[endpoint.name] = schema.root
    return shapes


async def record_trace(
    uow: UnitOfWorkFactory, reading: ReadingFactory, run: Run, now: datetime
) -> None:
    """Record what a child run shows: parent → it, and the sibling sequence. Nothing for a run
    whose parent is gone (pruned) or that has none. The runs are read in a read-only unit, so
    that the unit of work recording the sightings is short (SQLite's only write lock)."""
    async with reading() as read:
        parent, previous = await read.dag.trace_neighbours(run)
        if parent is None:
            return
        child = (await read.catalog.get_endpoint(run.endpoint_id)).ref
        sibling = (
            None
            if previous is None
            else (await read.catalog.get_endpoint(previous.endpoint_id)).ref
        )
        parent_ref = (await read.catalog.get_endpoint(parent.endpoint_id)).ref
    async with uow() as tx:
        await tx.graph.record(trace_sightings(parent_ref, child, sibling), now)
        await tx.commit()
