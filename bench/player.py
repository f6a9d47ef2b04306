"""Jobs played by the shipped workers on a fake clock, for as long as wanted.

The endpoint simulator answers on 127.0.0.1 in the clock's time; the workers are those of
`cronpilot scheduler --with-planner`: `serve_scheduler` (the scheduler with its housekeeping,
learner, notifier and heartbeat) and `serve_planner` (the built-in planner and the endpoints'
rules), on one store and one `ManualClock`, with the operator's settings. The clock moves
`step` seconds at a time, each time once the workers are done with the present moment
(`tests.support.settling`: every store call, unit of work and endpoint call is counted while
in flight). Missed interval slots coalesce to one, so with a step of minutes each endpoint is
called once per step, and every timer (housekeeping's prunes included) takes one turn per step
at most. After each step `after_step` sees the store, and may act as an admin would
(`reject_pending`).

Shared by the soak benchmark (`bench.soak`) and the left-alone trial
(`tests/e2e/test_left_alone.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from cronpilot.adapters.bootstrap import build_dispatcher, build_proposal_desk
from cronpilot.adapters.manual_clock import ManualClock
from cronpilot.adapters.processes import serve_planner, serve_scheduler
from cronpilot.adapters.settings import Settings
from cronpilot.adapters.sql import SqlStore
from cronpilot.domain.planning.planning import Proposal, ProposalStatus
from cronpilot.harness.stories import staged
from cronpilot.usecases.proposals import ProposalDesk
from cronpilot.usecases.queries import planner
from tests.support.settling import InFlight, TrackedDispatcher, tracked

START = datetime(2030, 3, 2, 0, 0, tzinfo=UTC)
STOP_SECONDS = 60
ADMIN = "admin"
MAX_PENDING = 1000
"""More pending proposals than an admin's one look takes in (never reached here)."""


@dataclass(frozen=True)
class Moment:
    """The present moment of a play, as `after_step` sees it."""

    clock: ManualClock
    store: SqlStore
    """The store itself, its calls not counted as the workers'."""
    desk: ProposalDesk
    """The proposal desk as the CLI builds it (`cronpilot proposals reject`)."""

    @property
    def elapsed(self) -> float:
        return (self.clock.now() - START).total_seconds()


AfterStep = Callable[[Moment], Awaitable[None]]


async def reject_pending(moment: Moment, reason: str) -> list[Proposal]:
    """What an admin does who says no to everything: every pending proposal rejected, as
    `cronpilot proposals list --status pending` and `proposals reject ID --reason` do."""
    page = await planner.list_proposals(
        moment.store.reading, status=ProposalStatus.PENDING, limit=MAX_PENDING
    )
    now = moment.clock.now()
    return [await moment.desk.reject(p.id, ADMIN, reason, now) for p in page.items]


async def play(
    settings: Settings,
    store: SqlStore,
    jobs: str,
    *,
    seconds: float,
    step: float,
    after_step: AfterStep,
    seed: int = 7,
) -> None:
    """Apply `jobs` (YAML naming the simulator `${SIMULATOR_URL}`) to `store` (migrated, of
    `settings.database_url`) and play them for `seconds` from `START`, `step` at a time;
    `after_step` is awaited after each step. Raises whatever a worker raised."""
    clock = ManualClock(START)
    flight = InFlight()
    dispatcher = TrackedDispatcher(build_dispatcher(settings), flight)
    stage = staged(
        store,
        jobs,
        "played jobs",
        clock.now,
        actor=ADMIN,
        seed=seed,
        allowed_networks=settings.allowed_networks,
    )
    try:
        async with stage:
            moment = Moment(clock, store, build_proposal_desk(settings, store, None))
            watched, stop = tracked(store, flight), asyncio.Event()
            workers = [
                asyncio.create_task(
                    serve_scheduler(settings, watched, clock, stop, dispatcher=dispatcher)
                ),
                asyncio.create_task(serve_planner(settings, watched, clock, stop)),
            ]
            try:
                await flight.settled()
                steps = round(seconds / step)
                for _ in range(steps):
                    clock.advance(step)
                    await flight.settled()
                    _raise_if_ended(workers)
                    await after_step(moment)
                    await flight.settled()
            finally:
                stop.set()
                async with asyncio.timeout(STOP_SECONDS):
                    await asyncio.gather(*workers)
    finally:
        await dispatcher.close()


def _raise_if_ended(workers: list[asyncio.Task[None]]) -> None:
    for worker in workers:
        if worker.done():
            with contextlib.suppress(asyncio.CancelledError):
                worker.result()
            raise RuntimeError(f"a worker stopped by itself: {worker.get_coro()!r}")
