"""Workers on a fake clock, run as they run in production (their own loops), and a way to know
when they are done with the present moment: every store call, unit of work and HTTP call they
make is counted while it is in flight, and the workers are settled once nothing has been in
flight for a good many turns of the event loop (all of them then wait on the clock, a waker
or each other). Tests then advance the clock: no sleeping, no hand-driven passes."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any

from cronpilot.domain.model import HttpRequest, Response
from cronpilot.domain.ports import Dispatcher, Store

REPOSITORIES = frozenset(
    [
        "catalog",
        "claims",
        "runs",
        "planner",
        "schemas",
        "graph",
        "dag",
        "notifications",
        "workers",
        "access",
        "approvals",
    ]
)
SETTLED_TURNS = 200
"""Event loop turns with nothing in flight after which the workers count as settled: far more
than the hops between two awaits of anything they do without I/O."""


class InFlight:
    def __init__(self) -> None:
        self.count = 0
        self._idle = asyncio.Event()
        """Set whenever nothing is in flight."""
        self._idle.set()

    def enter(self) -> None:
        self.count += 1
        self._idle.clear()

    def leave(self) -> None:
        self.count -= 1
        if self.count == 0:
            self._idle.set()

    def track(self, call: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        async def tracked(*args: Any, **kwargs: Any) -> Any:
            self.enter()
            try:
                return await call(*args, **kwargs)
            finally:
                self.leave()

        return tracked

    async def settled(self) -> None:
        """Return once nothing has been in flight for `SETTLED_TURNS` turns in a row. While
        something is, wait for it without spinning: turns spun while a database thread works
        would take the CPU from it (a soak of a month spent most of its time so)."""
        quiet = 0
        while quiet < SETTLED_TURNS:
            if self.count:
                await self._idle.wait()
            await asyncio.sleep(0)
            quiet = quiet + 1 if self.count == 0 else 0


class _Tracked:
    """An object whose coroutine methods count as in flight while they run, and whose
    repositories (a store's, a unit's) are tracked the same way."""

    def __init__(self, inner: Any, flight: InFlight) -> None:
        self._inner = inner
        self._flight = flight

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._inner, name)
        if name in REPOSITORIES:
            return _Tracked(found, self._flight)
        return self._flight.track(found) if inspect.iscoroutinefunction(found) else found


class _TrackedUnit(_Tracked):
    """A unit of work (or reading unit) in flight from its start to its end."""

    async def __aenter__(self) -> _TrackedUnit:
        self._flight.enter()
        try:
            await self._inner.__aenter__()
        except BaseException:
            self._flight.leave()
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        try:
            await self._inner.__aexit__(exc_type, exc, traceback)
        finally:
            self._flight.leave()


class TrackedStore(_Tracked):
    """`store` with every repository call and unit of work tracked by `flight`."""

    def unit_of_work(self) -> _TrackedUnit:
        return _TrackedUnit(self._inner.unit_of_work(), self._flight)

    def reading(self) -> _TrackedUnit:
        return _TrackedUnit(self._inner.reading(), self._flight)


class TrackedDispatcher:
    """`dispatcher` with every call tracked by `flight`."""

    def __init__(self, dispatcher: Dispatcher, flight: InFlight) -> None:
        self._dispatcher = dispatcher
        self._flight = flight

    async def dispatch(self, request: HttpRequest) -> Response:
        response: Response = await self._flight.track(self._dispatcher.dispatch)(request)
        return response

    async def close(self) -> None:
        await self._dispatcher.close()


def tracked(store: Store, flight: InFlight) -> Store:
    return TrackedStore(store, flight)
