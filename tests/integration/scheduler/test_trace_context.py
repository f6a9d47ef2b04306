"""W3C trace context on every call, through a real worker and dispatcher, seen by a loopback
endpoint that keeps the headers it was sent: the run's trace id, a new span id per attempt, a
DAG run's dependants in the trace of the run that began it."""

from __future__ import annotations

import asyncio
import re
from dataclasses import replace
from datetime import timedelta

from cronpilot.adapters.http.dispatcher import AiohttpDispatcher
from cronpilot.adapters.views.runs import run_view
from cronpilot.adapters.wake import InProcessWaker
from cronpilot.domain.graph.dependencies import with_dependants
from cronpilot.domain.model import EndpointSpec, RetryPolicy, Schedule
from cronpilot.domain.ports import Store
from cronpilot.domain.runs.tracing import trace_id_of
from tests.integration.scheduler.builders import DEADLINE, RunningWorker, declare, runs_of, spec
from tests.integration.scheduler.endpoint_server import EndpointServer
from tests.support.clock import FakeClock

TRACEPARENT = re.compile(r"00-(?P<trace>[0-9a-f]{32})-(?P<span>[0-9a-f]{16})-01")


def _sent(server: EndpointServer, name: str) -> list[tuple[str, str]]:
    """(trace id, span id) of every call `name` received, in order; exactly one header each."""
    sent = []
    for headers in server.headers[name]:
        [value] = headers.getall("traceparent")
        found = TRACEPARENT.fullmatch(value)
        assert found is not None, value
        assert "0" * 16 not in (found["trace"][:16], found["span"]), value
        sent.append((found["trace"], found["span"]))
    return sent


async def test_each_scheduled_run_is_a_trace_of_its_own_with_its_trace_id(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    await declare(store, clock.now(), spec(server, "ok", "tick"))

    async with RunningWorker(store, dispatcher, clock, waker) as running:
        await running.until_finished(1)
        async with asyncio.timeout(DEADLINE):
            await clock.until_sleeping_until(clock.now() + timedelta(seconds=60))
        clock.advance(60)
        await running.until_finished(2)

    newest, oldest = await runs_of(store, "tick")
    assert [trace for trace, _ in _sent(server, "tick")] == [oldest.trace_id, newest.trace_id]
    assert oldest.trace_id != newest.trace_id


async def test_a_retry_stays_in_the_run_s_trace_with_a_new_span_per_attempt(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    retry = RetryPolicy(attempts=2, backoff_seconds=1, max_backoff_seconds=1)
    flaky = EndpointSpec(
        name="flaky",
        url=server.url("/answer/flaky?status=503&times=1"),
        schedule=Schedule(interval_seconds=60),
        retry=retry,
    )
    await declare(store, clock.now(), flaky)

    async with RunningWorker(store, dispatcher, clock, waker) as running:
        async with asyncio.timeout(DEADLINE):
            retry_at = await clock.until_sleeping_within(
                clock.now() + timedelta(seconds=1), clock.now() + timedelta(seconds=2)
            )
        clock.advance((retry_at - clock.now()).total_seconds())
        await running.until_finished(1)

    [run] = await runs_of(store, "flaky")
    assert run.attempt == 2
    (first_trace, first_span), (second_trace, second_span) = _sent(server, "flaky")
    assert first_trace == second_trace == run.trace_id
    assert first_span != second_span


async def test_a_dag_run_is_one_trace_parents_and_children_alike(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    after = Schedule()
    await declare(
        store,
        clock.now(),
        *with_dependants(
            [
                spec(server, "ok", "root"),
                spec(server, "ok", "child", schedule=after, depends_on=("root",)),
                spec(server, "ok", "grandchild", schedule=after, depends_on=("child",)),
            ]
        ),
    )

    async with RunningWorker(store, dispatcher, clock, waker) as running:
        await running.until_finished(3)

    [root] = await runs_of(store, "root")
    [child] = await runs_of(store, "child")
    [grandchild] = await runs_of(store, "grandchild")
    assert (child.parent_trace_id, grandchild.parent_trace_id) == (root.trace_id, child.trace_id)
    sent = [_sent(server, name) for name in ("root", "child", "grandchild")]
    assert {trace for [(trace, _)] in sent} == {root.trace_id}
    assert len({span for [(_, span)] in sent}) == 3


async def test_the_trace_id_a_run_shows_is_the_one_its_call_sent(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    """`runs show` (text and JSON), the API and the console name the trace id the endpoint
    saw in its `traceparent`: a dependant's is its DAG run's, the root's."""
    after = Schedule()
    await declare(
        store,
        clock.now(),
        *with_dependants(
            [
                spec(server, "ok", "root"),
                spec(server, "ok", "child", schedule=after, depends_on=("root",)),
                spec(server, "ok", "grandchild", schedule=after, depends_on=("child",)),
            ]
        ),
    )

    async with RunningWorker(store, dispatcher, clock, waker) as running:
        await running.until_finished(3)

    for name in ("root", "child", "grandchild"):
        [run] = await runs_of(store, name)
        [(sent, _)] = _sent(server, name)
        shown = run_view(run, with_body=False)
        assert (trace_id_of(run), shown["trace_id"]) == (sent, sent)
        assert shown["run_trace_id"] == run.trace_id


async def test_a_declared_traceparent_is_replaced_by_the_run_s(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    fixed = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    declared = replace(spec(server, "ok", "pinned"), headers={"TraceParent": fixed})
    await declare(store, clock.now(), declared)

    async with RunningWorker(store, dispatcher, clock, waker) as running:
        await running.until_finished(1)

    [run] = await runs_of(store, "pinned")
    [(trace, _)] = _sent(server, "pinned")
    assert trace == run.trace_id
