"""Graph reads for the planner's tools (`get_dag_context`, `get_output_schema`, sibling
ordering), over the store's ports only."""

from __future__ import annotations

from datetime import datetime

from domain.context import DagContext, dag_context, related_siblings
from domain.model import JSON, Endpoint
from domain.ports import Store


async def read_dag_context(store: Store, endpoint_id: str) -> DagContext:
    """Upstream and downstream endpoints with edge types and latest status; raises
    `EndpointNotFound`."""
    endpoint = await store.catalog.get_endpoint(endpoint_id)
    job = await store.catalog.list_endpoints(endpoint.job_name)
    edges = await store.graph.list_edges(endpoint.job_name)
    latest = await store.runs.latest_runs([e.id for e in job])
    return dag_context(endpoint, job, edges, latest)


async def read_related_siblings(store: Store, endpoint_id: str, now: datetime) -> list[Endpoint]:
    """The endpoint's siblings, most related first; raises `EndpointNotFound`."""
    endpoint = await store.catalog.get_endpoint(endpoint_id)
    job = await store.catalog.list_endpoints(endpoint.job_name)
    edges = await store.graph.list_edges(endpoint.job_name)
    return related_siblings(endpoint, job, edges, now)


async def read_output_schema(store: Store, endpoint_id: str) -> dict[str, JSON] | None:
    """The endpoint's learnt output schema as JSON Schema (with `x-seen` counts and
    `x-confidence`), or None before its first stored body."""
    schema = await store.schemas.get_output_schema(endpoint_id)
    return None if schema is None or not schema.observations else schema.json_schema()
