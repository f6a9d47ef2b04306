"""The worker in a quiet window, driven by the fake clock: the window's first slot is recorded
`skipped` without a call, and the next call is the first slot after the window."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from cronpilot.adapters.http.dispatcher import AiohttpDispatcher
from cronpilot.adapters.wake import InProcessWaker
from cronpilot.domain.model import RunStatus, ScheduleSource
from cronpilot.domain.ports import Store
from cronpilot.domain.schedule.quiet import QuietWindow
from tests.integration.scheduler.builders import DEADLINE, RunningWorker, declare, runs_of, spec
from tests.integration.scheduler.endpoint_server import EndpointServer
from tests.support.clock import FakeClock

MINUTE = timedelta(seconds=60)


async def test_a_quiet_window_is_one_skipped_run_and_no_call(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    start = clock.now()  # Monday 12:00 UTC: quiet until 12:05
    lunch = (QuietWindow(hours=(12 * 60, 12 * 60 + 5)),)
    await declare(store, start, spec(server, "ok", "minutely", quiet=lunch))

    async with RunningWorker(store, dispatcher, clock, waker) as running:
        await running.until_finished(1)
        async with asyncio.timeout(DEADLINE):
            await clock.until_sleeping_until(start + 5 * MINUTE)
        assert server.calls == {}
        clock.advance(5 * 60)
        await running.until_finished(2)

    assert server.calls == {("minutely", (start + 5 * MINUTE).isoformat()): 1}
    skipped, called = sorted(await runs_of(store, "minutely"), key=lambda run: run.slot_at)
    assert (skipped.status, skipped.slot_at, skipped.schedule_source) == (
        RunStatus.SKIPPED,
        start,
        ScheduleSource.QUIET,
    )
    assert skipped.error_message == "skipped: quiet period until 2030-01-07T12:05:00+00:00"
    assert (called.status, called.slot_at) == (RunStatus.SUCCESS, start + 5 * MINUTE)
