"""The planner's graph reads over the store's ports (in-memory store; the SQL stores share the
repository contracts these build on)."""

from __future__ import annotations

from cronpilot.domain.graph.dependencies import with_dependants
from cronpilot.domain.graph.graph import EdgeSighting, EdgeSource, EdgeType
from cronpilot.domain.graph.outputs import OutputSchema
from cronpilot.domain.graph.schema_inference import merge_document
from cronpilot.domain.model import Finish, Pause, Response, Schedule
from cronpilot.domain.planning.context import dag_context, related_siblings
from cronpilot.planner.analysis_context import read_analysis_context
from cronpilot.planner.schema_views import read_output_schema
from cronpilot.usecases.declarations import apply_to_catalog
from tests.contract.builders import LEASE_SECONDS, T0, declaration, spec
from tests.support.memory_store import MemoryStore
from tests.support.scheduling import set_pause


async def test_dag_context_siblings_and_output_schema_through_the_ports() -> None:
    store = MemoryStore()
    specs = with_dependants(
        [spec("fetch"), spec("audit"), spec("load", schedule=Schedule(), depends_on=("fetch",))]
    )
    await apply_to_catalog(store.catalog, [declaration("etl", *specs)], T0)
    fetch = await store.catalog.get_endpoint("etl/fetch")
    audit = await store.catalog.get_endpoint("etl/audit")
    await set_pause(store.catalog, audit.id, Pause("not now"), T0)
    [claim] = await store.claims.claim_due(T0, "w", LEASE_SECONDS, 10)
    await store.claims.finish_many(
        [Finish(claim, "w", Response(status_code=500), T0, LEASE_SECONDS)]
    )
    await store.graph.record(
        [EdgeSighting("etl/audit", "etl/fetch", EdgeType.SEQUENCE, EdgeSource.INFERRED, True)], T0
    )

    # What the planner's tools compose: the session's context and the latest runs.
    load = await store.catalog.get_endpoint("etl/load")
    held = await read_analysis_context(store.reading, load, 20)
    latest = await store.runs.latest_runs([e.id for e in held.endpoints])
    context = dag_context(load, held.endpoints, held.edges, latest)
    [upstream] = context.upstream
    assert (upstream.ref, upstream.edge_types, upstream.latest_status) == (
        "etl/fetch",
        (EdgeType.DEPENDENCY,),
        "failed",
    )
    siblings = related_siblings(fetch, held.endpoints, held.edges, T0)
    assert [e.name for e in siblings] == ["load", "audit"]

    assert await read_output_schema(store, fetch.id) is None
    schema = OutputSchema(fetch.id)
    merge_document(schema.root, {"batch_id": "b1"})
    await store.schemas.save_output_schema(schema, [], T0, rebuilt=False)
    learnt = await read_output_schema(store, fetch.id)
    assert learnt is not None
    assert learnt["required"] == ["batch_id"]
