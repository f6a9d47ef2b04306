"""Short ways to declare endpoints and build a worker in scheduler tests."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from types import TracebackType
from typing import Any

from cronpilot.adapters.bootstrap import worker_config
from cronpilot.domain.errors import StoreUnavailable
from cronpilot.domain.model import Endpoint, EndpointSpec, Job, Run, RunStatus, Schedule
from cronpilot.domain.ports import Dispatcher, JobDeclaration, Store, Tracer, Waker
from cronpilot.scheduler.worker import RunObserver, SchedulerWorker
from cronpilot.usecases.declarations import apply_to_catalog
from tests.integration.scheduler.endpoint_server import EndpointServer
from tests.support.clock import FakeClock
from tests.support.settings import settings_for_tests

JOB = "tests"
DEADLINE = 5.0
"""Longest a scheduler test waits for anything: a hang fails fast instead of stalling the run."""


def spec(server: EndpointServer, kind: str, name: str, **fields: Any) -> EndpointSpec:
    """An endpoint on `server` at `/{kind}/{name}`, every 60 s unless told otherwise."""
    fields.setdefault("schedule", Schedule(interval_seconds=60))
    return EndpointSpec(name=name, url=server.url(f"/{kind}/{name}"), **fields)


async def declare(store: Store, now: datetime, *specs: EndpointSpec) -> dict[str, Endpoint]:
    await apply_to_catalog(store.catalog, [JobDeclaration(Job(name=JOB), specs)], now)
    return {endpoint.name: endpoint for endpoint in await store.catalog.list_endpoints(JOB)}


def make_worker(
    store: Store,
    dispatcher: Dispatcher,
    clock: FakeClock,
    waker: Waker,
    observer: RunObserver | None = None,
    *,
    tracer: Tracer | None = None,
    **config: Any,
) -> SchedulerWorker:
    config.setdefault("worker_id", "w1")
    config.setdefault("max_sleep_seconds", 3600.0)
    # Each slot claimed once due, unless a test says otherwise: the fake clock then shows it.
    config.setdefault("claim_ahead_seconds", 0.0)
    return SchedulerWorker(
        store,
        dispatcher,
        clock,
        waker,
        worker_config(settings_for_tests(**config)),
        observer=observer,
        tracer=tracer,
    )


async def runs_of(store: Store, name: str) -> list[Run]:
    endpoint = await store.catalog.get_endpoint(f"{JOB}/{name}")
    return await store.runs.list_runs(endpoint.id)


async def running_runs(store: Store) -> list[Run]:
    runs = [
        run
        for endpoint in await store.catalog.list_endpoints()
        for run in await store.runs.list_runs(endpoint.id, limit=1000)
    ]
    return [run for run in runs if run.status is RunStatus.RUNNING]


class Notifying:
    """Delegates to `target`; each event in `after` is set when the async method of that name
    returns. Lets a test await a store call made by a timer or set `stop` at a chosen moment."""

    def __init__(self, target: object, **after: asyncio.Event) -> None:
        self._target = target
        self._after = after

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._target, name)
        event = self._after.get(name)
        if event is None:
            return method

        async def notifying(*args: Any, **kwargs: Any) -> Any:
            result = await method(*args, **kwargs)
            event.set()
            return result

        return notifying


class Held:
    """Delegates to `target`, but holds every call of the async method `name` until `release`
    is set; `arrived` is set when the first call comes in. Lets a test freeze a worker in the
    middle of a store call."""

    def __init__(self, target: object, name: str) -> None:
        self._target = target
        self._name = name
        self.arrived = asyncio.Event()
        self.release = asyncio.Event()

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._target, name)
        if name != self._name:
            return method

        async def held(*args: Any, **kwargs: Any) -> Any:
            self.arrived.set()
            await self.release.wait()
            return await method(*args, **kwargs)

        return held


@dataclass
class StoreOf:
    """A `Store` assembled from repositories, some of them wrapped in `Notifying`."""

    catalog: Any
    claims: Any
    runs: Any
    schemas: Any
    graph: Any
    dag: Any
    workers: Any = None
    """Only housekeeping's prune needs it."""

    async def close(self) -> None:
        """The wrapped store is closed by its own fixture."""


class CallCounter:
    """Delegates to `target`, counting the calls of its async methods that have ended (returned
    or raised), so that a test can await a worker being done with a number of store calls. The
    runs of `finish_many` count one by one, as `finish`."""

    def __init__(self, target: object) -> None:
        self._target = target
        self.ended: Counter[str] = Counter()
        self._changed = asyncio.Event()

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._target, name)

        async def counted(*args: Any, **kwargs: Any) -> Any:
            try:
                return await method(*args, **kwargs)
            finally:
                if name == "finish_many":
                    self.ended["finish"] += len(args[0])
                else:
                    self.ended[name] += 1
                self._changed.set()

        return counted

    async def until(self, name: str, count: int) -> None:
        """Wait until `count` calls of `name` have ended (bound it with `asyncio.timeout`)."""
        while self.ended[name] < count:
            self._changed.clear()
            await self._changed.wait()


class RunningWorker:
    """A worker on its own loop, `SchedulerWorker.run`, in the background for the duration of an
    `async with`: the test drives it with the fake clock and awaits the store calls it makes;
    leaving the block stops it and waits for its shutdown."""

    def __init__(
        self,
        store: Store,
        dispatcher: Dispatcher,
        clock: FakeClock,
        waker: Waker,
        observer: RunObserver | None = None,
        *,
        tracer: Tracer | None = None,
        **config: Any,
    ) -> None:
        # Calls still in flight when a test fails are abandoned quickly instead of outliving
        # the test's deadline.
        config.setdefault("grace_seconds", 0.5)
        self.claims = CallCounter(store.claims)
        self.worker = make_worker(
            StoreOf(store.catalog, self.claims, store.runs, store.schemas, store.graph, store.dag),
            dispatcher,
            clock,
            waker,
            observer,
            tracer=tracer,
            **config,
        )
        self.stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def until_called(self, name: str, count: int) -> None:
        """Wait until the worker's `count`-th call of `claims.<name>` has ended."""
        async with asyncio.timeout(DEADLINE):
            await self.claims.until(name, count)

    async def until_finished(self, count: int) -> None:
        """Wait until the worker has finished `count` runs (recorded or refused by the store)."""
        await self.until_called("finish", count)

    async def __aenter__(self) -> RunningWorker:
        self._task = asyncio.create_task(self.worker.run(self.stop))
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._task is not None
        self.stop.set()
        async with asyncio.timeout(DEADLINE):
            await self._task


class Failing:
    """Delegates to `target`, but the next `times[name]` calls of each async method `name` raise
    `StoreUnavailable`, as calls to a restarting database do. A method named in `committed`
    does its work first: the database committed, and the connection dropped before the reply
    came back."""

    def __init__(self, target: object, *, committed: Sequence[str] = (), **times: int) -> None:
        self._target = target
        self._committed = set(committed)
        self.times = Counter(times)

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._target, name)
        if name not in self.times:
            return method

        async def failing(*args: Any, **kwargs: Any) -> Any:
            if self.times[name] <= 0:
                return await method(*args, **kwargs)
            self.times[name] -= 1
            if name in self._committed:
                await method(*args, **kwargs)
            raise StoreUnavailable(
                "database postgresql+asyncpg://db/cronpilot failed: "
                "ConnectionDoesNotExistError: connection was closed in the middle of operation"
            )

        return failing
