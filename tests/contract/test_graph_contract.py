"""SchemaRepository and GraphRepository contracts, run on every store."""

from __future__ import annotations

import pytest

from cronpilot.domain.errors import EndpointNotFound
from cronpilot.domain.graph.graph import EdgeSighting, EdgeSource, EdgeType
from cronpilot.domain.graph.outputs import DriftEvent, OutputSchema
from cronpilot.domain.graph.schema_inference import merge_document
from cronpilot.domain.ports import Store
from cronpilot.usecases.declarations import apply_to_catalog
from tests.contract.builders import T0, add_endpoint, declaration, seconds, spec


async def test_an_output_schema_is_saved_only_over_the_version_it_was_read_at(
    store: Store,
) -> None:
    endpoint_id = await add_endpoint(store, "j", "e", T0)
    assert await store.schemas.get_output_schema(endpoint_id) is None
    first = OutputSchema(endpoint_id, through_slot=T0)
    merge_document(first.root, {"a": 1})
    stale = first.copy()

    assert await store.schemas.save_output_schema(first, [], T0, rebuilt=False)
    assert first.version == 1
    assert not await store.schemas.save_output_schema(stale, [], T0, rebuilt=False)
    assert stale.version == 0

    stored = await store.schemas.get_output_schema(endpoint_id)
    assert stored == first
    merge_document(stored.root, {"a": "x"})
    assert await store.schemas.save_output_schema(stored, [], T0, rebuilt=False)
    again = await store.schemas.get_output_schema(endpoint_id)
    assert again is not None
    assert again.version == 2
    assert again.json_schema()["properties"]["a"]["type"] == ["integer", "string"]


async def test_the_schemas_of_many_endpoints_are_read_at_once(store: Store) -> None:
    names = [f"e{n}" for n in range(1_100)]
    await apply_to_catalog(store.catalog, [declaration("j", *(spec(name) for name in names))], T0)
    ids = [e.id for e in await store.catalog.list_endpoints("j")]
    # Some endpoints have answered; more ids asked than one query of the SQL stores binds.
    learnt = ids[::7]
    for n, endpoint_id in enumerate(learnt):
        schema = OutputSchema(endpoint_id, through_slot=T0)
        merge_document(schema.root, {"n": n})
        assert await store.schemas.save_output_schema(schema, [], T0, rebuilt=False)

    read = await store.schemas.get_output_schemas([*ids, "0" * 32])

    assert sorted(read) == sorted(learnt)
    for endpoint_id, schema in read.items():
        assert schema == await store.schemas.get_output_schema(endpoint_id)
    assert await store.schemas.get_output_schemas([]) == {}


async def test_drift_is_appended_newest_first_and_replaced_by_a_rebuild(store: Store) -> None:
    endpoint_id = await add_endpoint(store, "j", "e", T0)
    schema = OutputSchema(endpoint_id)
    older = DriftEvent(endpoint_id, "r1", T0, ("a: new field",))
    newer = DriftEvent(endpoint_id, "r2", T0 + seconds(5), ("a: now optional", "b: new field"))
    assert await store.schemas.save_output_schema(schema, [older], T0, rebuilt=False)
    assert await store.schemas.save_output_schema(schema, [newer], T0, rebuilt=False)
    assert await store.schemas.list_drift(endpoint_id) == [newer, older]
    assert await store.schemas.list_drift(endpoint_id, limit=1) == [newer]

    assert await store.schemas.save_output_schema(schema, [], T0, rebuilt=True)
    assert await store.schemas.list_drift(endpoint_id) == []


async def test_saving_the_schema_of_an_unknown_endpoint_raises(store: Store) -> None:
    with pytest.raises(EndpointNotFound):
        await store.schemas.save_output_schema(OutputSchema("0" * 32), [], T0, rebuilt=False)


def _seen(a: str, b: str, kind: EdgeType, counted: bool = True) -> EdgeSighting:
    source = EdgeSource.INFERRED if counted else EdgeSource.TEMPLATE
    return EdgeSighting(a, b, kind, source, counted)


async def test_edges_count_sightings_and_become_observed_at_the_third(store: Store) -> None:
    dep = _seen("etl/fetch", "etl/load", EdgeType.DEPENDENCY)
    await store.graph.record([_seen("etl/fetch", "etl/load", EdgeType.DEPENDENCY, False)], T0)
    await store.graph.record([dep, dep], T0 + seconds(1))
    [edge] = await store.graph.list_edges()
    assert (edge.source, edge.count) == (EdgeSource.INFERRED, 2)
    assert edge.weight == pytest.approx(0.7)

    await store.graph.record([dep], T0 + seconds(2))
    [edge] = await store.graph.list_edges()
    assert (edge.source, edge.count, edge.updated_at) == (
        EdgeSource.OBSERVED,
        3,
        T0 + seconds(2),
    )
    assert edge.weight == pytest.approx(1.0)


async def test_a_pair_holds_several_types_and_self_loops_are_counted(store: Store) -> None:
    provides = EdgeSighting(
        "etl/a", "etl/b", EdgeType.PROVIDES, EdgeSource.INFERRED, False, 0.42, "strict"
    )
    loop = _seen("etl/a", "etl/a", EdgeType.SEQUENCE)
    await store.graph.record([provides, _seen("etl/a", "etl/b", EdgeType.SEQUENCE), loop, loop], T0)
    edges = {(e.from_node, e.to_node, e.type): e for e in await store.graph.list_edges()}
    assert set(edges) == {
        ("etl/a", "etl/a", EdgeType.SEQUENCE),
        ("etl/a", "etl/b", EdgeType.PROVIDES),
        ("etl/a", "etl/b", EdgeType.SEQUENCE),
    }
    assert edges["etl/a", "etl/a", EdgeType.SEQUENCE].count == 2
    stored = edges["etl/a", "etl/b", EdgeType.PROVIDES]
    assert (stored.count, stored.confidence, stored.coverage) == (0, 0.42, "strict")


async def test_edges_of_a_job_are_those_with_an_end_in_it(store: Store) -> None:
    await store.graph.record(
        [
            _seen("my_job", "my_job/a", EdgeType.CONTAINS, False),
            _seen("other/x", "my_job/a", EdgeType.PROVIDES, False),
            _seen("myXjob/b", "myXjob/c", EdgeType.SEQUENCE),
        ],
        T0,
    )
    edges = await store.graph.list_edges("my_job")
    assert [(e.from_node, e.to_node) for e in edges] == [
        ("my_job", "my_job/a"),
        ("other/x", "my_job/a"),
    ]
    assert len(await store.graph.list_edges()) == 3


async def test_retract_deletes_uncounted_edges_of_a_type_into_nodes_except_those_kept(
    store: Store,
) -> None:
    kept = _seen("j/a", "j/b", EdgeType.PROVIDES, False)
    stale = _seen("j/c", "j/b", EdgeType.PROVIDES, False)
    elsewhere = _seen("j/a", "k/x", EdgeType.PROVIDES, False)
    other_type = _seen("j/c", "j/b", EdgeType.DEPENDENCY, False)
    counted = _seen("j/d", "j/b", EdgeType.PROVIDES)
    await store.graph.record([kept, stale, elsewhere, other_type, counted], T0)

    deleted = await store.graph.retract(EdgeType.PROVIDES, {"j/b"}, {kept.key})

    assert deleted == 1
    assert {e.key for e in await store.graph.list_edges()} == {
        kept.key,
        elsewhere.key,
        other_type.key,
        counted.key,
    }
    assert await store.graph.retract(EdgeType.PROVIDES, set(), set()) == 0
