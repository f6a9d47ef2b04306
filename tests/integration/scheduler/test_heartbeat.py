"""The heartbeat on the fake clock: a worker registers at start and moves its last-seen on at
every interval, and a store outage costs a beat, not the timer."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

from cronpilot.domain.ports import Store
from cronpilot.domain.runs.workers import WorkerInfo
from cronpilot.scheduler.heartbeat import Heartbeat
from tests.integration.scheduler.builders import DEADLINE, Failing, Notifying
from tests.support.clock import FakeClock
from tests.support.side_tasks import running

EVERY = 10.0


async def _last_seen(store: Store, since: datetime) -> datetime:
    [listed] = await store.workers.list_active(since, since)
    return listed.worker.last_seen


async def test_a_worker_beats_at_start_then_every_interval_through_an_outage(
    store: Store, clock: FakeClock
) -> None:
    start = clock.now()
    beaten = asyncio.Event()
    failing = Failing(store.workers, beat=0)
    heartbeat = Heartbeat(
        Notifying(failing, beat=beaten),
        clock,
        WorkerInfo("w1", "box", 7, "0.1.0", start, start),
        EVERY,
    )

    async with running(heartbeat):
        async with asyncio.timeout(DEADLINE):
            await beaten.wait()
            assert await _last_seen(store, start) == start
            beaten.clear()
            failing.times["beat"] = 1  # the next beat finds the store down
            for _ in range(2):
                await clock.until_sleeping_until(clock.now() + timedelta(seconds=EVERY))
                clock.advance(EVERY)
            await beaten.wait()

    assert await _last_seen(store, start) == start + timedelta(seconds=2 * EVERY)
