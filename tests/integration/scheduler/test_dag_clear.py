"""`dag clear ROOT_RUN --from NODE` through the worker, on every store (issue 25): the node and
what depends on it run again in that DAG run with the answers its parents gave, the root is not
called again; a node that cannot be cleared is refused and nothing changes. `runs retry` of a
dependant's run is the same clear limited to its node."""

from __future__ import annotations

import pytest

from cronpilot.adapters.http.dispatcher import AiohttpDispatcher
from cronpilot.adapters.wake import InProcessWaker
from cronpilot.domain.errors import InvalidRunRequest
from cronpilot.domain.model import RunStatus, RunTrigger
from cronpilot.domain.ports import Store
from cronpilot.usecases.run_control import clear_dag, retry_run
from tests.integration.scheduler.builders import RunningWorker, runs_of, spec
from tests.integration.scheduler.endpoint_server import EndpointServer
from tests.integration.scheduler.test_dag_runs import _declare, _dependant
from tests.support.clock import FakeClock
from tests.support.settings import settings_for_tests

ADMIN = "cli:ann@web-1"


async def _root_mid_leaf(store: Store, clock: FakeClock, server: EndpointServer) -> None:
    """A chain whose dependants each echo what their parent answered: root → mid → leaf."""
    await _declare(
        store,
        clock,
        spec(server, "echo", "root"),
        _dependant(server, "echo", "mid", "root", query="?root_calls={{ root.calls }}"),
        _dependant(server, "echo", "leaf", "mid", query="?mid_calls={{ mid.calls }}"),
    )


async def test_retry_of_a_dependant_re_runs_it_alone_with_the_same_upstream_answers(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    await _root_mid_leaf(store, clock, server)
    async with RunningWorker(store, dispatcher, clock, waker) as running:
        await running.until_finished(3)
        [root] = await runs_of(store, "root")
        [first_mid] = await runs_of(store, "mid")
        retried = await retry_run(store.unit_of_work, waker, first_mid.id, ADMIN, clock.now())
        # The next DAG sweep starts it (one before the wait was written would not).
        clock.advance(settings_for_tests().dag_sweep_seconds)
        await running.until_finished(4)

    assert (retried.endpoint.ref, retried.run) == ("tests/mid", None)
    assert server.calls_of("root") == 1
    mids = sorted(await runs_of(store, "mid"), key=lambda run: run.started_at)
    assert [run.body for run in mids] == [
        {"name": "mid", "calls": 1, "root_calls": "1"},
        {"name": "mid", "calls": 2, "root_calls": "1"},
    ]
    again = mids[1]
    assert (again.trigger, again.status, again.dag_run_id) == (
        RunTrigger.DAG,
        RunStatus.SUCCESS,
        root.trace_id,
    )
    # What depends on it does not run again: its finish started nothing.
    assert [run.body for run in await runs_of(store, "leaf")] == [
        {"name": "leaf", "calls": 1, "mid_calls": "1"}
    ]
    assert await store.dag.list_waits() == []


async def test_clear_re_runs_the_node_and_its_dependants_with_the_same_upstream_answers(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    await _root_mid_leaf(store, clock, server)
    async with RunningWorker(store, dispatcher, clock, waker) as running:
        await running.until_finished(3)
        [root] = await runs_of(store, "root")
        [first_mid] = await runs_of(store, "mid")
        for node, refusal in [
            ("root", "is the DAG run's root"),
            ("nope", "not an endpoint of job 'tests'"),
        ]:
            with pytest.raises(InvalidRunRequest, match=refusal):
                await clear_dag(
                    store.unit_of_work, waker, root.id, node, actor=ADMIN, now=clock.now()
                )
        # A dependant's run names its DAG run as well as the root's does.
        cleared = await clear_dag(
            store.unit_of_work, waker, first_mid.id[:8], "mid", actor=ADMIN, now=clock.now()
        )
        # The next DAG sweep starts it (one before the wait was written would not).
        clock.advance(settings_for_tests().dag_sweep_seconds)
        await running.until_finished(5)

    assert cleared.ref == "tests/mid"
    assert server.calls_of("root") == 1
    mids = sorted(await runs_of(store, "mid"), key=lambda run: run.started_at)
    leaves = sorted(await runs_of(store, "leaf"), key=lambda run: run.started_at)
    assert [run.body for run in mids] == [
        {"name": "mid", "calls": 1, "root_calls": "1"},
        {"name": "mid", "calls": 2, "root_calls": "1"},
    ]
    assert [run.body for run in leaves] == [
        {"name": "leaf", "calls": 1, "mid_calls": "1"},
        {"name": "leaf", "calls": 2, "mid_calls": "2"},
    ]
    again, second_leaf = mids[1], leaves[1]
    assert (again.trigger, again.status, again.dag_run_id) == (
        RunTrigger.DAG,
        RunStatus.SUCCESS,
        root.trace_id,
    )
    assert second_leaf.parent_trace_id == again.trace_id
    assert await store.dag.list_waits() == []
