"""DAG runs through the worker, on every store, against real HTTP on loopback: children of
the parent's run, independent dependants in parallel, a node with two parents waiting for
both, data passed by templates, `only_if_changed` skips recorded; and what the learner makes
of it all (schemas, provides and trace edges)."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

from cronpilot.adapters.http.dispatcher import AiohttpDispatcher
from cronpilot.adapters.wake import InProcessWaker
from cronpilot.domain.graph.dependencies import with_dependants
from cronpilot.domain.graph.graph import EdgeSource, EdgeType
from cronpilot.domain.model import EndpointSpec, Job, RunStatus, RunTrigger, Schedule
from cronpilot.domain.ports import JobDeclaration, Store
from cronpilot.scheduler.learning import RunLearner
from cronpilot.usecases.declarations import apply_to_catalog
from tests.integration.scheduler.builders import DEADLINE, JOB, RunningWorker, runs_of, spec
from tests.integration.scheduler.endpoint_server import EndpointServer
from tests.support.clock import FakeClock
from tests.support.side_tasks import running


def _dependant(
    server: EndpointServer, kind: str, name: str, *upstreams: str, query: str = "", **fields: Any
) -> EndpointSpec:
    made = spec(server, kind, name, schedule=Schedule(), depends_on=upstreams, **fields)
    return replace(made, url=made.url + query)


async def _declare(store: Store, clock: FakeClock, *specs: EndpointSpec) -> None:
    await apply_to_catalog(
        store.catalog, [JobDeclaration(Job(name=JOB), with_dependants(specs))], clock.now()
    )


async def test_a_diamond_runs_children_of_their_parents_and_the_join_waits_for_both(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    await _declare(
        store,
        clock,
        spec(server, "echo", "root"),
        _dependant(server, "slow", "left", "root", query="?ms=200"),
        _dependant(server, "slow", "right", "root", query="?ms=200"),
        _dependant(
            server,
            "echo",
            "join",
            "left",
            "right",
            query="?from_left={{ left.name }}&from_right={{ right.calls }}",
        ),
    )

    async with RunningWorker(store, dispatcher, clock, waker) as running:
        await running.until_finished(4)

    [root] = await runs_of(store, "root")
    [left] = await runs_of(store, "left")
    [right] = await runs_of(store, "right")
    [join] = await runs_of(store, "join")
    assert root.trigger is RunTrigger.SCHEDULE
    for child in (left, right):
        assert (child.trigger, child.parent_trace_id, child.status) == (
            RunTrigger.DAG,
            root.trace_id,
            RunStatus.SUCCESS,
        )
    # Independent dependants ran at the same time, each 200 ms on the server.
    assert server.max_in_flight == 2
    # The child of whichever parent reported last, and only once both had.
    assert join.parent_trace_id in {left.trace_id, right.trace_id}
    assert join.body == {"name": "join", "calls": 1, "from_left": "left", "from_right": "1"}
    assert await store.dag.list_waits() == []


async def test_only_if_changed_skips_a_dependant_and_records_it(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    await _declare(
        store,
        clock,
        spec(server, "same", "fetch"),
        _dependant(
            server,
            "echo",
            "load",
            "fetch",
            query="?batch={{ fetch.batch_id }}",
            only_if_changed=True,
        ),
    )
    async with RunningWorker(store, dispatcher, clock, waker) as running:
        await running.until_finished(2)
        clock.advance(60)
        await running.until_finished(3)
    # Leaving the block waited for the second fetch's handling, its dependants' skip included.

    second_fetch, _ = await runs_of(store, "fetch")
    skipped, loaded = await runs_of(store, "load")
    assert loaded.body == {"name": "load", "calls": 1, "batch": "batch-1"}
    assert skipped.status is RunStatus.SKIPPED
    assert skipped.parent_trace_id == second_fetch.trace_id
    assert skipped.error_message == "skipped: only_if_changed: no upstream response changed"
    assert server.calls_of("load") == 1


async def test_the_learner_learns_schemas_provides_and_trace_edges_off_the_hot_path(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    await _declare(
        store,
        clock,
        spec(server, "same", "fetch"),
        _dependant(server, "echo", "a", "fetch", query="?batch_id={{ fetch.batch_id }}"),
        _dependant(server, "echo", "b", "fetch", query="?batch_id=x"),
    )
    learner = RunLearner(store.unit_of_work, store.reading, clock)
    async with running(learner):
        async with RunningWorker(store, dispatcher, clock, waker, learner) as worker:
            await worker.until_finished(3)
        async with asyncio.timeout(DEADLINE):
            await learner.idle()

    fetch = await store.catalog.get_endpoint(f"{JOB}/fetch")
    schema = await store.schemas.get_output_schema(fetch.id)
    assert schema is not None
    assert schema.json_schema()["required"] == ["batch_id", "name"]
    edges = {(e.from_node, e.to_node, e.type): e for e in await store.graph.list_edges(JOB)}
    provides_a = edges[f"{JOB}/fetch", f"{JOB}/a", EdgeType.PROVIDES]
    assert provides_a.coverage == "strict"
    assert edges[f"{JOB}/fetch", f"{JOB}/b", EdgeType.PROVIDES].coverage == "optional"
    traced = edges[f"{JOB}/fetch", f"{JOB}/a", EdgeType.DEPENDENCY]
    assert (traced.count, traced.source) == (1, EdgeSource.INFERRED)
    sequence = [key for key in edges if key[2] is EdgeType.SEQUENCE]
    assert sequence in (
        [(f"{JOB}/a", f"{JOB}/b", EdgeType.SEQUENCE)],
        [(f"{JOB}/b", f"{JOB}/a", EdgeType.SEQUENCE)],
    )
