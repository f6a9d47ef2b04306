"""The planner's graph reads over the store's ports (in-memory store; the SQL stores share the
repository contracts these build on)."""

from __future__ import annotations

from adapters.memory import MemoryStore
from domain.dependencies import with_dependants
from domain.graph import EdgeSighting, EdgeSource, EdgeType
from domain.model import Pause, Response, Schedule
from domain.outputs import OutputSchema
from domain.schema_inference import merge_document
from planner.graph_context import read_dag_context, read_output_schema, read_related_siblings
from tests.contract.builders import LEASE_SECONDS, T0, declaration, spec


async def test_dag_context_siblings_and_output_schema_through_the_ports() -> None:
    store = MemoryStore()
    specs = with_dependants(
        [spec("fetch"), spec("audit"), spec("load", schedule=Schedule(), depends_on=("fetch",))]
    )
    await store.catalog.apply([declaration("etl", *specs)], T0)
    fetch = await store.catalog.get_endpoint("etl/fetch")
    audit = await store.catalog.get_endpoint("etl/audit")
    await store.catalog.set_pause(audit.id, Pause("not now"), T0)
    [claim] = await store.claims.claim_due(T0, "w", LEASE_SECONDS, 10)
    run = await store.claims.finish(claim, "w", Response(status_code=500), T0)
    await store.dag.upstream_finished(claim, run, "w", LEASE_SECONDS, T0)
    await store.graph.record(
        [EdgeSighting("etl/audit", "etl/fetch", EdgeType.SEQUENCE, EdgeSource.INFERRED, True)], T0
    )

    load = await store.catalog.get_endpoint("etl/load")
    context = await read_dag_context(store, load.id)
    [upstream] = context.upstream
    assert (upstream.ref, upstream.edge_types, upstream.latest_status) == (
        "etl/fetch",
        (EdgeType.DEPENDENCY,),
        "failed",
    )
    assert [e.name for e in await read_related_siblings(store, fetch.id, T0)] == ["load", "audit"]

    assert await read_output_schema(store, fetch.id) is None
    schema = OutputSchema(fetch.id)
    merge_document(schema.root, {"batch_id": "b1"})
    await store.schemas.save_output_schema(schema, [], T0, rebuilt=False)
    learnt = await read_output_schema(store, fetch.id)
    assert learnt is not None
    assert learnt["required"] == ["batch_id"]
