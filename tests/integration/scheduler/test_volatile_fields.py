"""Answers that carry a clock, a request id and a counter: the same data each time, a different
body each time. Through the worker on every store, against real HTTP on loopback: once those
fields are left out (declared in `change_ignores`, or learnt volatile by the schema learner),
`only_if_changed` skips the dependant and the planner sees no change."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace

import pytest

from cronpilot.adapters.http.dispatcher import AiohttpDispatcher
from cronpilot.adapters.wake import InProcessWaker
from cronpilot.domain.graph.dependencies import with_dependants
from cronpilot.domain.graph.schema_inference import VOLATILE_AFTER
from cronpilot.domain.model import (
    Endpoint,
    EndpointSpec,
    Job,
    PlannerMode,
    Run,
    RunStatus,
    Schedule,
)
from cronpilot.domain.ports import JobDeclaration, Store
from cronpilot.planner.freshness import FreshnessAnalyst
from cronpilot.scheduler.learning import RunLearner
from cronpilot.usecases.declarations import apply_to_catalog
from tests.integration.planner.builders import make_planner
from tests.integration.scheduler.builders import DEADLINE, JOB, RunningWorker, runs_of, spec
from tests.integration.scheduler.endpoint_server import EndpointServer
from tests.support.clock import FakeClock
from tests.support.side_tasks import running

STAMPS = ("checked_at", "request_id", "seq")
EVERY = 20.0
CLAMPS = {"min_interval_seconds": 5.0, "max_interval_seconds": 60.0}


async def _declare(store: Store, clock: FakeClock, *specs: EndpointSpec) -> None:
    job = Job(name=JOB, planner_mode=PlannerMode.AUTO)
    await apply_to_catalog(
        store.catalog, [JobDeclaration(job, with_dependants(specs))], clock.now()
    )


def _fetch(server: EndpointServer, ignores: tuple[str, ...] = ()) -> EndpointSpec:
    made = spec(server, "stamped", "fetch", change_ignores=ignores, **CLAMPS)
    return replace(made, schedule=Schedule(interval_seconds=EVERY))


def _load(server: EndpointServer) -> EndpointSpec:
    made = spec(server, "echo", "load", schedule=Schedule(), depends_on=("fetch",))
    return replace(made, url=made.url + "?batch={{ fetch.batch_id }}", only_if_changed=True)


class _Learning:
    """The learner as the worker's observer, counting the runs handed to it: a test waits for
    the worker to hand over a run before it waits for the learner to learn it."""

    def __init__(self, learner: RunLearner) -> None:
        self.learner = learner
        self.observed = 0
        self._changed = asyncio.Event()

    def observe(self, endpoint: Endpoint, run: Run) -> None:
        self.learner.observe(endpoint, run)
        self.observed += 1
        self._changed.set()

    async def idle_after(self, runs: int) -> None:
        """Wait until `runs` runs were handed over and everything handed over is learnt."""
        async with asyncio.timeout(DEADLINE):
            while self.observed < runs:
                self._changed.clear()
                await self._changed.wait()
            await self.learner.idle()


@dataclass
class _World:
    """A store, the fake clock, the loopback server and a worker's dispatcher and waker."""

    store: Store
    clock: FakeClock
    server: EndpointServer
    dispatcher: AiohttpDispatcher
    waker: InProcessWaker

    @asynccontextmanager
    async def running(self, learn: bool) -> AsyncIterator[tuple[RunningWorker, _Learning | None]]:
        """A worker running, with a learner as its observer when `learn`."""
        if not learn:
            async with RunningWorker(self.store, self.dispatcher, self.clock, self.waker) as run:
                yield run, None
            return
        learner = RunLearner(self.store.unit_of_work, self.store.reading, self.clock)
        learning = _Learning(learner)
        async with (
            running(learner),
            RunningWorker(self.store, self.dispatcher, self.clock, self.waker, learning) as run,
        ):
            yield run, learning


@pytest.fixture
def world(
    store: Store,
    clock: FakeClock,
    server: EndpointServer,
    dispatcher: AiohttpDispatcher,
    waker: InProcessWaker,
) -> _World:
    return _World(store, clock, server, dispatcher, waker)


async def _next_fetch(store: Store, clock: FakeClock) -> None:
    """Move the clock to fetch's next slot, once the worker sleeps until it: moved before the
    worker has reckoned its sleep from the time it read, the clock would leave it asleep past
    the slot."""
    fetch = await store.catalog.get_endpoint(f"{JOB}/fetch")
    assert fetch.next_run_at is not None
    async with asyncio.timeout(DEADLINE):
        await clock.until_sleeping_until(fetch.next_run_at)
    clock.advance((fetch.next_run_at - clock.now()).total_seconds())


async def _run_slots(
    world: _World,
    running: RunningWorker,
    learning: _Learning | None,
    *,
    slots: int,
    per_slot: int,
) -> None:
    """Let the worker run `slots` slots of fetch (`per_slot` finishes each), learning from each
    before the clock moves on."""
    for n in range(1, slots + 1):
        await _next_fetch(world.store, world.clock)
        await running.until_finished(n * per_slot)
        if learning is not None:
            await learning.idle_after(n * per_slot)


@pytest.mark.parametrize(
    ("ignores", "learn", "skipped"),
    [((), False, False), (STAMPS, False, True), ((), True, True)],
    ids=["compared whole", "declared", "learnt"],
)
async def test_only_if_changed_skips_when_only_clocks_and_ids_changed(
    world: _World, *, ignores: tuple[str, ...], learn: bool, skipped: bool
) -> None:
    store, clock, server = world.store, world.clock, world.server
    await _declare(store, clock, _fetch(server, ignores), _load(server))
    # The learnt case calls the same data often enough to tell its clocks and ids apart.
    before = VOLATILE_AFTER if learn else 1
    async with world.running(learn) as (running, learning):
        await _run_slots(world, running, learning, slots=before, per_slot=2)
        # One more fetch: the same data, a new time, request id and counter.
        await _next_fetch(store, clock)
        await running.until_finished(2 * before + (1 if skipped else 2))

    fetch = await store.catalog.get_endpoint(f"{JOB}/fetch")
    assert fetch.volatile_fields == (STAMPS if learn else ())
    newest_load = (await runs_of(store, "load"))[0]
    if skipped:
        assert newest_load.status is RunStatus.SKIPPED
        assert newest_load.error_message == "skipped: only_if_changed: no upstream response changed"
        assert server.calls_of("load") == before
    else:
        assert newest_load.status is RunStatus.SUCCESS
        assert server.calls_of("load") == before + 1


@pytest.mark.parametrize(
    ("ignores", "learn", "verdict"),
    [
        ((), False, "changes about every"),
        (STAMPS, False, "no change seen"),
        ((), True, "no change seen"),
    ],
    ids=["compared whole", "declared", "learnt"],
)
async def test_the_planner_sees_no_change_where_clocks_and_ids_alone_change(
    world: _World, *, ignores: tuple[str, ...], learn: bool, verdict: str
) -> None:
    await _declare(world.store, world.clock, _fetch(world.server, ignores))
    async with world.running(learn) as (running, learning):
        await _run_slots(world, running, learning, slots=VOLATILE_AFTER, per_slot=1)

    planner = make_planner(world.store, FreshnessAnalyst(), world.clock)
    [session] = await planner.analyse_now(f"{JOB}/fetch")

    assert session.reasoning.startswith(verdict)
