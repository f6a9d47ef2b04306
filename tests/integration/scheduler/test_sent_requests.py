"""The request a run sent is recorded on it: templates filled, secrets masked."""

from __future__ import annotations

from dataclasses import replace

from cronpilot.adapters.http.dispatcher import AiohttpDispatcher
from cronpilot.adapters.wake import InProcessWaker
from cronpilot.domain.access.secrets import MASK
from cronpilot.domain.graph.dependencies import with_dependants
from cronpilot.domain.model import Job, Schedule
from cronpilot.domain.ports import JobDeclaration, Store
from cronpilot.scheduler.requests import RUN_ID_HEADER
from cronpilot.usecases.declarations import apply_to_catalog
from tests.integration.scheduler.builders import JOB, RunningWorker, runs_of, spec
from tests.integration.scheduler.endpoint_server import EndpointServer
from tests.support.clock import FakeClock


async def test_a_dag_child_records_its_request_after_templates_with_secrets_masked(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    child = spec(
        server,
        "echo",
        "load",
        schedule=Schedule(),
        depends_on=("fetch",),
        method="POST",
        headers={"Authorization": "Bearer s3cret", "X-Batch": "{{ fetch.batch_id }}"},
        body={"batch": "{{ fetch.batch_id }}"},
    )
    child = replace(child, url=child.url + "?batch={{ fetch.batch_id }}&api_key=k3y")
    specs = with_dependants([spec(server, "same", "fetch"), child])
    await apply_to_catalog(store.catalog, [JobDeclaration(Job(name=JOB), specs)], clock.now())

    async with RunningWorker(store, dispatcher, clock, waker) as running:
        await running.until_finished(2)

    [fetch] = await runs_of(store, "fetch")
    [load] = await runs_of(store, "load")
    assert fetch.request is not None and fetch.request.method == "GET"
    sent = load.request
    assert sent is not None
    assert sent.method == "POST"
    assert sent.url == server.url(f"/echo/load?batch=batch-1&api_key={MASK}")
    assert sent.headers["Authorization"] == MASK
    assert sent.headers["X-Batch"] == "batch-1"
    assert sent.headers[RUN_ID_HEADER] == load.id
    assert sent.body == '{"batch":"batch-1"}'
