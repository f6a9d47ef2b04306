"""Declaring jobs feeds the graph: config edges in, withdrawn ones out; provides edges follow
what the schemas support now. On the in-memory store (the SQL stores share the contract)."""

from __future__ import annotations

from datetime import UTC, datetime

from cronpilot.adapters.jobs_file import parse_declarations
from cronpilot.domain.graph.graph import Edge, EdgeSighting, EdgeSource, EdgeType
from cronpilot.usecases.declarations import apply_declarations
from cronpilot.usecases.graph_edges import refresh_job_provides
from tests.support.memory_store import MemoryStore

T0 = datetime(2030, 1, 1, tzinfo=UTC)
JOBS = """\
jobs:
  - name: etl
    endpoints:
      - name: fetch
        url: https://93.184.216.34/fetch
        interval: 30s
      - name: load
        url: https://93.184.216.34/load
        depends_on: [fetch]
"""


def _keys(edges: list[Edge]) -> set[tuple[str, str, str]]:
    return {(e.from_node, e.to_node, e.type.value) for e in edges}


async def _apply(store: MemoryStore, text: str) -> None:
    declarations = parse_declarations(text, "jobs.yaml", [])
    await apply_declarations(
        store.unit_of_work, None, declarations, "jobs.yaml", actor="cli:ann@web-1", now=T0
    )


async def test_config_edges_come_and_go_with_the_file() -> None:
    store = MemoryStore()
    await _apply(store, JOBS)
    assert _keys(await store.graph.list_edges()) == {
        ("etl", "etl/fetch", "contains"),
        ("etl", "etl/load", "contains"),
        ("etl/fetch", "etl/load", "dependency"),
    }

    unchained = JOBS.replace("        depends_on: [fetch]\n", "        interval: 1m\n")
    await _apply(store, unchained)
    assert ("etl/fetch", "etl/load", "dependency") not in _keys(await store.graph.list_edges())


async def test_provides_edges_the_schemas_no_longer_support_are_retracted() -> None:
    store = MemoryStore()
    await _apply(store, JOBS)
    stale = EdgeSighting("etl/load", "etl/fetch", EdgeType.PROVIDES, EdgeSource.INFERRED, False)
    await store.graph.record([stale], T0)

    await refresh_job_provides(store.unit_of_work, "etl", T0)

    assert ("etl/load", "etl/fetch", "provides") not in _keys(await store.graph.list_edges())
