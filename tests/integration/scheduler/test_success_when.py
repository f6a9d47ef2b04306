"""`success_when`: a response judged by a condition on its body, status and headers, through a
real worker, a real dispatcher and a loopback endpoint."""

from __future__ import annotations

from cronpilot.adapters.http.dispatcher import AiohttpDispatcher
from cronpilot.adapters.wake import InProcessWaker
from cronpilot.domain.model import EndpointSpec, ErrorKind, RunStatus, Schedule
from cronpilot.domain.ports import Store
from tests.integration.scheduler.builders import RunningWorker, declare, runs_of
from tests.integration.scheduler.endpoint_server import EndpointServer
from tests.integration.scheduler.test_retries import RETRY, answering
from tests.support.clock import FakeClock


async def test_a_response_that_fails_its_condition_fails_the_run_once_and_backs_off(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    """A 200 whose body says it is degraded fails with kind `assertion`, is not retried within
    the slot (the same answer would be judged the same) and counts as a failure; a condition on
    an answer header holds."""
    degraded = EndpointSpec(
        name="degraded",
        url=server.url("/echo/degraded?state=degraded"),
        schedule=Schedule(interval_seconds=60),
        retry=RETRY,
        success_when='body.state == "ok" && status == 200',
    )
    steered = answering(
        server,
        "steered",
        "next_run=30s",
        success_when='headers["cronpilot-next-run"] == "30s" && duration_ms >= 0',
    )
    await declare(store, clock.now(), degraded, steered)

    async with RunningWorker(store, dispatcher, clock, waker) as running:
        await running.until_finished(2)

    [failed] = await runs_of(store, "degraded")
    assert (failed.status, failed.status_code, failed.attempt) == (RunStatus.FAILED, 200, 1)
    assert failed.error_kind is ErrorKind.ASSERTION
    assert failed.error_message == (
        "success_when 'body.state == \"ok\" && status == 200' is false "
        '(body.state = "degraded", status = 200)'
    )
    assert failed.body == {"name": "degraded", "calls": 1, "state": "degraded"}
    assert server.calls_of("degraded") == 1
    assert (await store.catalog.get_endpoint("tests/degraded")).failure_count == 1
    [held] = await runs_of(store, "steered")
    assert (held.status, held.error_kind) == (RunStatus.SUCCESS, None)
