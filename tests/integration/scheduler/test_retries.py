"""Retries within a slot and endpoints steering their schedule, through a real worker, a real
dispatcher and a loopback endpoint, with the fake clock driving every wait."""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime, timedelta
from typing import Any

import pytest

from cronpilot.adapters.http.dispatcher import AiohttpDispatcher
from cronpilot.adapters.wake import InProcessWaker
from cronpilot.domain.model import (
    EndpointSpec,
    ErrorKind,
    HintSource,
    RetryPolicy,
    RunStatus,
    RunTrigger,
    Schedule,
    ScheduleSource,
)
from cronpilot.domain.ports import Store
from cronpilot.usecases.run_requests import request_run
from tests.integration.scheduler.builders import DEADLINE, RunningWorker, declare, runs_of
from tests.integration.scheduler.endpoint_server import EndpointServer
from tests.support.clock import FakeClock

RETRY = RetryPolicy(attempts=3, backoff_seconds=1, max_backoff_seconds=30)


def answering(server: EndpointServer, name: str, query: str, **fields: Any) -> EndpointSpec:
    """An endpoint at `/answer/{name}?{query}` (see `EndpointServer`), every 60 s by default."""
    fields.setdefault("schedule", Schedule(interval_seconds=60))
    return EndpointSpec(name=name, url=server.url(f"/answer/{name}?{query}"), **fields)


def seconds(amount: float) -> timedelta:
    return timedelta(seconds=amount)


async def sleeping_within(clock: FakeClock, earliest: datetime, latest: datetime) -> datetime:
    async with asyncio.timeout(DEADLINE):
        return await clock.until_sleeping_within(earliest, latest)


async def test_every_attempt_is_recorded_and_the_last_decides_the_run(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    await declare(store, clock.now(), answering(server, "flaky", "status=503&times=2", retry=RETRY))
    slot = clock.now()

    async with RunningWorker(store, dispatcher, clock, waker) as running:
        # Backoff with jitter: 1-2 s, then 2-3 s.
        first_wait = await sleeping_within(clock, slot + seconds(1), slot + seconds(2))
        clock.advance((first_wait - clock.now()).total_seconds())
        second = clock.now()
        second_wait = await sleeping_within(clock, second + seconds(2), second + seconds(3))
        clock.advance((second_wait - clock.now()).total_seconds())
        await running.until_finished(1)

    [run] = await runs_of(store, "flaky")
    assert (run.status, run.status_code, run.attempt) == (RunStatus.SUCCESS, 200, 3)
    assert run.body == {"name": "flaky", "calls": 3}
    assert [(a.attempt, a.status_code, a.error_kind) for a in run.attempts] == [
        (1, 503, ErrorKind.HTTP_STATUS),
        (2, 503, ErrorKind.HTTP_STATUS),
        (3, 200, None),
    ]
    assert run.attempts[0].error_message == "HTTP 503 Service Unavailable"
    assert server.calls[("flaky", slot.isoformat())] == 3
    assert running.worker.stats.retries == 2
    endpoint = await store.catalog.get_endpoint("tests/flaky")
    assert (endpoint.failure_count, endpoint.next_run_at) == (0, slot + seconds(60))


async def test_a_slot_that_keeps_failing_is_failed_by_its_last_attempt_and_keeps_its_lease(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    slow_retry = RetryPolicy(attempts=2, backoff_seconds=20, max_backoff_seconds=40)
    await declare(store, clock.now(), answering(server, "down", "status=500", retry=slow_retry))
    slot = clock.now()

    async with RunningWorker(store, dispatcher, clock, waker, lease_seconds=10) as running:
        wait_until = await sleeping_within(clock, slot + seconds(20), slot + seconds(40))
        extensions = 0
        while clock.now() < wait_until:
            # The lease (10 s) is extended at half-time all through the wait.
            clock.advance(min(6.0, (wait_until - clock.now()).total_seconds()))
            if clock.now() < wait_until:
                extensions += 1
                await running.until_called("extend_lease", extensions)
                assert await store.claims.reap(clock.now()) == 0
        await running.until_finished(1)

    assert extensions >= 3
    [run] = await runs_of(store, "down")
    assert (run.status, run.status_code, run.attempt) == (RunStatus.FAILED, 500, 2)
    assert [a.status_code for a in run.attempts] == [500, 500]
    endpoint = await store.catalog.get_endpoint("tests/down")
    assert (endpoint.failure_count, endpoint.lease_owner) == (1, None)


async def test_post_is_not_retried_without_unsafe(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    """`apply` refuses this declaration; a spec from anywhere else meets the same rule here."""
    post = answering(server, "order", "status=503&times=1", method="POST", retry=RETRY)
    await declare(store, clock.now(), post)

    async with RunningWorker(store, dispatcher, clock, waker) as running:
        await running.until_finished(1)

    [run] = await runs_of(store, "order")
    assert (run.status, run.status_code, run.attempt) == (RunStatus.FAILED, 503, 1)
    assert server.calls_of("order") == 1
    assert running.worker.stats.retries == 0


async def test_post_is_retried_with_unsafe(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    unsafe = RetryPolicy(attempts=3, backoff_seconds=1, max_backoff_seconds=30, unsafe=True)
    post = answering(server, "order", "status=503&times=1", method="POST", retry=unsafe)
    await declare(store, clock.now(), post)
    slot = clock.now()

    async with RunningWorker(store, dispatcher, clock, waker) as running:
        wait_until = await sleeping_within(clock, slot + seconds(1), slot + seconds(2))
        clock.advance((wait_until - clock.now()).total_seconds())
        await running.until_finished(1)

    [run] = await runs_of(store, "order")
    assert (run.status, run.attempt) == (RunStatus.SUCCESS, 2)
    assert server.calls_of("order") == 2


async def test_no_retry_starts_at_or_after_the_next_slot(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    many = RetryPolicy(attempts=5, backoff_seconds=10, max_backoff_seconds=60)
    every_30s = Schedule(interval_seconds=30)
    await declare(
        store, clock.now(), answering(server, "down", "status=503", schedule=every_30s, retry=many)
    )
    slot = clock.now()

    async with RunningWorker(store, dispatcher, clock, waker) as running:
        # The first retry waits 10-20 s; the second would wait 20-30 s more: past the next slot
        # (slot + 30 s), so the run ends with the second attempt, before that slot.
        wait_until = await sleeping_within(clock, slot + seconds(10), slot + seconds(20))
        clock.advance((wait_until - clock.now()).total_seconds())
        await running.until_finished(1)
        assert clock.now() < slot + seconds(30)

    [run] = await runs_of(store, "down")
    assert (run.status, run.attempt) == (RunStatus.FAILED, 2)
    assert server.calls_of("down") == 2


async def test_a_retry_waits_as_long_as_retry_after_asks_but_not_past_the_next_slot(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    await declare(
        store,
        clock.now(),
        answering(server, "soon", "status=429&times=1&retry_after=7", retry=RETRY),
        answering(server, "late", "status=503&retry_after=100", retry=RETRY),
    )
    slot = clock.now()

    async with RunningWorker(store, dispatcher, clock, waker) as running:
        # `late` asks for 100 s, after its next slot (60 s): it is not retried.
        await running.until_finished(1)
        async with asyncio.timeout(DEADLINE):
            await clock.until_sleeping_until(slot + seconds(7))
        clock.advance(7)
        await running.until_finished(2)

    [soon] = await runs_of(store, "soon")
    [late] = await runs_of(store, "late")
    assert (soon.status, soon.attempt) == (RunStatus.SUCCESS, 2)
    assert (late.status, late.attempt) == (RunStatus.FAILED, 1)
    held = await store.catalog.get_endpoint("tests/late")
    assert held.retry_after_at == slot + seconds(100)
    assert (held.next_run_at, held.next_run_source) == (
        slot + seconds(120),  # the failure backoff (2 x 60 s) is later still
        ScheduleSource.BACKOFF,
    )


async def test_retry_after_moves_the_next_run_and_that_slot_consumes_it(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    await declare(
        store, clock.now(), answering(server, "busy", "status=429&times=1&retry_after=300")
    )
    slot = clock.now()

    async with RunningWorker(store, dispatcher, clock, waker) as running:
        await running.until_finished(1)
        held = await store.catalog.get_endpoint("tests/busy")
        assert held.retry_after_at == slot + seconds(300)
        assert (held.next_run_at, held.next_run_source) == (
            slot + seconds(300),
            ScheduleSource.RETRY_AFTER,
        )
        async with asyncio.timeout(DEADLINE):
            await clock.until_sleeping_until(slot + seconds(300))
        clock.advance(300)
        await running.until_finished(2)

    second, first = await runs_of(store, "busy")
    assert (first.status_code, second.status_code) == (429, 200)
    assert (second.slot_at, second.schedule_source) == (
        slot + seconds(300),
        ScheduleSource.RETRY_AFTER,
    )
    steering = first.attempts[0].steering
    assert steering is not None
    assert steering.retry_after_seconds == 300
    freed = await store.catalog.get_endpoint("tests/busy")
    assert freed.retry_after_at is None
    assert (freed.next_run_at, freed.next_run_source) == (
        slot + seconds(360),
        ScheduleSource.BASELINE,
    )


async def test_retry_after_is_capped_by_max_interval(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    await declare(
        store,
        clock.now(),
        answering(server, "busy", "status=503&retry_after=600", max_interval_seconds=90),
    )
    slot = clock.now()

    async with RunningWorker(store, dispatcher, clock, waker) as running:
        await running.until_finished(1)

    held = await store.catalog.get_endpoint("tests/busy")
    assert (held.next_run_at, held.next_run_source) == (
        slot + seconds(90),
        ScheduleSource.CLAMPED_MAX,
    )


async def test_the_global_cap_cuts_a_long_retry_after(
    store: Store, clock: FakeClock, server: EndpointServer, waker: InProcessWaker
) -> None:
    await declare(store, clock.now(), answering(server, "busy", "status=503&retry_after=3000"))
    slot = clock.now()
    capped = AiohttpDispatcher(allowed_networks=["127.0.0.1/32"], max_retry_after_seconds=600)
    try:
        async with RunningWorker(store, capped, clock, waker) as running:
            await running.until_finished(1)
    finally:
        await capped.close()

    held = await store.catalog.get_endpoint("tests/busy")
    assert (held.retry_after_at, held.next_run_source) == (
        slot + seconds(600),
        ScheduleSource.RETRY_AFTER,
    )


async def test_cronpilot_next_run_becomes_an_endpoint_hint(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    slot = clock.now()
    once_at = (slot + seconds(15)).isoformat()
    await declare(
        store,
        clock.now(),
        answering(server, "every", "next_run=20s", accept_hints=True),
        answering(server, "once", f"next_run={once_at.replace('+', '%2B')}", accept_hints=True),
    )

    async with RunningWorker(store, dispatcher, clock, waker) as running:
        await running.until_finished(2)
        async with asyncio.timeout(DEADLINE):
            await clock.until_sleeping_until(slot + seconds(15))
        clock.advance(15)
        await running.until_finished(3)
        clock.advance(5)
        await running.until_finished(4)

    every = await store.catalog.get_endpoint("tests/every")
    assert every.interval_hint is not None
    assert (every.interval_hint.interval_seconds, every.interval_hint.source) == (
        20,
        HintSource.ENDPOINT,
    )
    assert every.next_run_source is ScheduleSource.HINT_INTERVAL
    second_every, _ = await runs_of(store, "every")
    assert (second_every.slot_at, second_every.schedule_source) == (
        slot + seconds(20),
        ScheduleSource.HINT_INTERVAL,
    )
    second_once, _ = await runs_of(store, "once")
    assert (second_once.slot_at, second_once.schedule_source) == (
        slot + seconds(15),
        ScheduleSource.HINT_ONESHOT,
    )
    # Its second answer names the same time again, now past: not a hint any more.
    [again] = second_once.attempts
    assert again.steering is not None
    assert again.steering.ignored == (
        f"Cronpilot-Next-Run ignored: {once_at} is not in the future",
    )
    assert running.worker.stats.ignored_headers == 1


async def test_steering_headers_ignored_are_counted_and_logged_once_per_run(  # noqa: PLR0917
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A hint from an endpoint that did not opt in, and a garbage `Retry-After`."""
    await declare(
        store, clock.now(), answering(server, "pushy", "status=503&retry_after=soon&next_run=5s")
    )
    slot = clock.now()

    with caplog.at_level(logging.INFO, logger="cronpilot.scheduler"):
        async with RunningWorker(store, dispatcher, clock, waker) as running:
            await running.until_finished(1)

    [run] = await runs_of(store, "pushy")
    assert (run.status, run.status_code) == (RunStatus.FAILED, 503)
    steering = run.attempts[0].steering
    assert steering is not None
    assert steering.ignored == (
        "Retry-After 'soon' ignored: neither delta-seconds nor an HTTP date",
        "Cronpilot-Next-Run ignored: the endpoint does not accept hints (accept_hints is off)",
    )
    endpoint = await store.catalog.get_endpoint("tests/pushy")
    assert (endpoint.interval_hint, endpoint.retry_after_at) == (None, None)
    assert endpoint.next_run_at == slot + seconds(120)  # the failure backoff, nothing else
    assert running.worker.stats.ignored_headers == 2
    [logged] = [r for r in caplog.records if getattr(r, "action", None) == "steering_ignored"]
    assert logged.levelno == logging.INFO
    assert "Retry-After 'soon' ignored" in logged.getMessage()


async def test_a_stopping_worker_retries_nothing_and_records_the_last_answer(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    patient = RetryPolicy(attempts=3, backoff_seconds=5, max_backoff_seconds=30)
    await declare(store, clock.now(), answering(server, "down", "status=503", retry=patient))
    slot = clock.now()

    async with RunningWorker(store, dispatcher, clock, waker) as running:
        await sleeping_within(clock, slot + seconds(5), slot + seconds(10))
    # Leaving the block stopped the worker in the middle of the retry's wait.

    [run] = await runs_of(store, "down")
    assert (run.status, run.status_code, run.attempt) == (RunStatus.FAILED, 503, 1)
    assert server.calls_of("down") == 1
    assert running.worker.stats.abandoned == 0


async def test_no_retry_starts_within_the_floor_of_the_next_slot(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    """Every 5 s, floor 1 s: a retry after 4.5-4.9 s would come 0.1-0.5 s before the next call."""
    late = RetryPolicy(attempts=3, backoff_seconds=4.5, max_backoff_seconds=4.9)
    every_5s = Schedule(interval_seconds=5)
    down = answering(server, "down", "status=503", schedule=every_5s, retry=late)
    await declare(store, clock.now(), down)
    slot = clock.now()

    async with RunningWorker(store, dispatcher, clock, waker) as running:
        await running.until_finished(1)

    [run] = await runs_of(store, "down")
    assert (run.status, run.attempt) == (RunStatus.FAILED, 1)
    assert server.calls_of("down") == 1
    assert clock.now() == slot


async def test_a_manual_run_retries_only_until_the_next_scheduled_call(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    """Every hour, run by hand 50 minutes after a slot: the retries end before the next slot,
    not an hour after the run by hand."""
    patient = RetryPolicy(attempts=5, backoff_seconds=240, max_backoff_seconds=600)
    hourly = Schedule(interval_seconds=3600)
    await declare(store, clock.now(), answering(server, "down", "", schedule=hourly, retry=patient))
    slot = clock.now()

    async with RunningWorker(store, dispatcher, clock, waker) as running:
        await running.until_finished(1)
        async with asyncio.timeout(DEADLINE):
            await clock.until_sleeping_until(slot + seconds(3600))
        clock.advance(50 * 60)
        # The endpoint goes down: re-declared to answer 503 (its schedule state stays).
        failing = answering(server, "down", "status=503", schedule=hourly, retry=patient)
        await declare(store, clock.now(), failing)
        asked = clock.now()
        await request_run(store.unit_of_work, waker, "tests/down", "cli:ann@web-1", asked)
        # The first retry waits 4-8 min, before 13:00 less the floor; the second would wait
        # 8-10 min more: past it.
        first_wait = await sleeping_within(clock, asked + seconds(240), asked + seconds(480))
        clock.advance((first_wait - clock.now()).total_seconds())
        await running.until_finished(2)
        assert clock.now() < slot + seconds(3600)

    manual, _ = await runs_of(store, "down")
    assert (manual.trigger, manual.status, manual.attempt) == (
        RunTrigger.MANUAL,
        RunStatus.FAILED,
        2,
    )
    endpoint = await store.catalog.get_endpoint("tests/down")
    assert endpoint.next_run_at == slot + seconds(3600)


async def test_a_manual_run_s_retry_after_holds_the_schedule_back(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    """The endpoint asked not to be called for 10 minutes: the schedule's next call (in 50 s)
    waits too. Its `Cronpilot-Next-Run` does not set the schedule's pace."""
    await declare(store, clock.now(), answering(server, "busy", "", accept_hints=True))
    slot = clock.now()

    async with RunningWorker(store, dispatcher, clock, waker) as running:
        await running.until_finished(1)
        async with asyncio.timeout(DEADLINE):
            await clock.until_sleeping_until(slot + seconds(60))
        asked = clock.advance(10)
        limited = answering(
            server, "busy", "status=429&retry_after=600&next_run=5s", accept_hints=True
        )
        await declare(store, clock.now(), limited)
        await request_run(store.unit_of_work, waker, "tests/busy", "cli:ann@web-1", asked)
        await running.until_finished(2)
        async with asyncio.timeout(DEADLINE):
            await clock.until_sleeping_until(asked + seconds(600))

    manual, _ = await runs_of(store, "busy")
    assert (manual.trigger, manual.status_code) == (RunTrigger.MANUAL, 429)
    [attempt] = manual.attempts
    assert attempt.steering is not None
    assert attempt.steering.retry_after_seconds == 600
    assert attempt.steering.ignored == (
        "Cronpilot-Next-Run ignored: a run asked for by hand (manual, backfill) does not set "
        "the schedule's pace",
    )
    held = await store.catalog.get_endpoint("tests/busy")
    assert (held.retry_after_at, held.next_run_at, held.next_run_source) == (
        asked + seconds(600),
        asked + seconds(600),
        ScheduleSource.RETRY_AFTER,
    )
    assert (held.interval_hint, held.failure_count, held.last_slot_at) == (None, 0, slot)


async def test_a_retry_after_of_thousands_of_digits_is_ignored_and_the_429_recorded(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    digits = "9" * 5000
    await declare(store, clock.now(), answering(server, "huge", f"status=429&retry_after={digits}"))
    slot = clock.now()

    async with RunningWorker(store, dispatcher, clock, waker) as running:
        await running.until_finished(1)

    [run] = await runs_of(store, "huge")
    assert (run.status, run.status_code, run.error_kind) == (
        RunStatus.FAILED,
        429,
        ErrorKind.HTTP_STATUS,
    )
    [attempt] = run.attempts
    assert attempt.steering is not None
    [reason] = attempt.steering.ignored
    assert reason.endswith("(5000 characters) ignored: more than 365 days")
    endpoint = await store.catalog.get_endpoint("tests/huge")
    assert (endpoint.retry_after_at, endpoint.next_run_at) == (None, slot + seconds(120))


async def test_a_wait_no_clock_can_add_ends_the_retries_and_the_run_is_recorded(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> None:
    """`apply` refuses such a backoff; a policy from anywhere else must not leave the run
    running until the reaper."""
    endless = RetryPolicy(attempts=3, backoff_seconds=8.64e18, max_backoff_seconds=8.64e18)
    await declare(store, clock.now(), answering(server, "down", "status=503", retry=endless))

    async with RunningWorker(store, dispatcher, clock, waker) as running:
        await running.until_finished(1)

    [run] = await runs_of(store, "down")
    assert (run.status, run.status_code, run.attempt) == (RunStatus.FAILED, 503, 1)
    assert running.worker.stats.retries == 0
