"""A DAG suggested for an intent: candidates by hybrid search, the graph's strongest edges for
the order, and an edge that would close a cycle refused (and said)."""

from __future__ import annotations

from datetime import UTC, datetime

from cronpilot.domain.graph.graph import EdgeSighting, EdgeSource, EdgeType
from cronpilot.domain.model import EndpointSpec, Job, Schedule
from cronpilot.domain.ports import JobDeclaration
from cronpilot.usecases.dag_suggestion import suggest_dag
from cronpilot.usecases.declarations import apply_to_catalog
from tests.support.memory_store import MemoryStore

T0 = datetime(2030, 1, 1, tzinfo=UTC)


def _spec(name: str, description: str) -> EndpointSpec:
    return EndpointSpec(
        name, f"https://example.com/{name}", Schedule(interval_seconds=60), description=description
    )


async def test_the_strongest_edges_order_the_dag_and_a_cycle_is_refused() -> None:
    store = MemoryStore()
    specs = [
        _spec("pull", "Pull new orders"),
        _spec("clean", "Clean the orders pulled"),
        _spec("weather", "Today's weather"),
    ]
    await apply_to_catalog(store.catalog, [JobDeclaration(Job("shop"), specs)], T0)
    await store.graph.record(
        [
            EdgeSighting("shop/pull", "shop/clean", EdgeType.PROVIDES, EdgeSource.OBSERVED, False),
            EdgeSighting("shop/clean", "shop/pull", EdgeType.SEQUENCE, EdgeSource.INFERRED, False),
        ],
        T0,
    )

    found = await suggest_dag(store.reading, None, "pull the orders and clean them")

    assert found is not None and found.job == "shop"
    [edge] = found.edges
    assert (edge.upstream, edge.dependant, edge.kind) == ("pull", "clean", EdgeType.PROVIDES)
    [(refused, cycle)] = found.refused
    assert (refused.upstream, refused.dependant) == ("clean", "pull")
    assert set(cycle) == {"pull", "clean"}
    by_name = {s.name: s for s in found.declaration.endpoints}
    assert by_name["clean"].depends_on == ("pull",)
    assert "weather" not in by_name
    # Suggested, never applied.
    assert (await store.catalog.get_endpoint("shop/clean")).spec.depends_on == ()
