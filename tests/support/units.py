"""Units of work with a repository swapped, through the ports: a factory over a real store's
units whose repositories are wrapped (counted, or failing after a given call), so that a test
can watch a use case's steps or break it between two of them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any

from cronpilot.domain.ports import ReadingUnit, Store, UnitOfWork

Wrap = Callable[[str, Any], Any]
"""(repository name, repository) → what the unit hands out instead."""


def no_unit_of_work() -> UnitOfWork:
    """A `UnitOfWorkFactory` for a use case that must only read: opening a unit fails the test
    (on SQLite a unit of work takes the write lock, even to read)."""
    raise AssertionError("a unit of work was opened only to read")


class InjectedFailure(Exception):
    """Raised by a `failing_after` wrapper: a crash between two steps of a use case."""


class WrappedUnits:
    """A `UnitOfWorkFactory` over `store` whose units hand out `wrap(name, repository)`."""

    def __init__(self, store: Store, wrap: Wrap) -> None:
        self._store = store
        self._wrap = wrap

    def __call__(self) -> UnitOfWork:
        return _WrappedUnit(self._store.unit_of_work(), self._wrap)

    def reading(self) -> ReadingUnit:
        """A `ReadingFactory` over `store` whose units hand out the wrapped repositories too."""
        return _WrappedUnit(self._store.reading(), self._wrap)


class _WrappedUnit:
    def __init__(self, inner: Any, wrap: Wrap) -> None:
        # A `UnitOfWork`, or a `ReadingUnit` (whose `commit` is never called).
        self._inner = inner
        self._wrap = wrap

    async def __aenter__(self) -> _WrappedUnit:
        await self._inner.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self._inner.__aexit__(exc_type, exc, traceback)

    async def commit(self) -> None:
        await self._inner.commit()

    def __getattr__(self, name: str) -> Any:
        return self._wrap(name, getattr(self._inner, name))


class Proxy:
    """A repository whose `method` is replaced by `replacement(real method)`."""

    def __init__(self, inner: Any, method: str, replacement: Callable[..., Any]) -> None:
        self._inner = inner
        self._method = method
        self._replacement = replacement

    def __getattr__(self, name: str) -> Any:
        real = getattr(self._inner, name)
        return self._replacement(real) if name == self._method else real


def failing_after(repository: str, method: str, calls: int = 1) -> Wrap:
    """Let `repository.method` run `calls` times (across every unit of the factory), then
    raise `InjectedFailure` right after the last of them has written."""
    done = Counter[str]()

    def replacement(real: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        async def run(*args: Any, **kwargs: Any) -> Any:
            result = await real(*args, **kwargs)
            done[method] += 1
            if done[method] == calls:
                raise InjectedFailure(f"{repository}.{method} call {calls}")
            return result

        return run

    def wrap(name: str, found: Any) -> Any:
        return Proxy(found, method, replacement) if name == repository else found

    return wrap


def counting(counts: Counter[str], repository: str, *methods: str) -> Wrap:
    """Count the calls of `repository`'s `methods` into `counts`, by method name."""

    def wrap(name: str, found: Any) -> Any:
        if name != repository:
            return found
        for method in methods:
            found = Proxy(found, method, _counter(counts, method))
        return found

    return wrap


def _counter(
    counts: Counter[str], method: str
) -> Callable[[Callable[..., Awaitable[Any]]], Callable[..., Awaitable[Any]]]:
    def replacement(real: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        async def run(*args: Any, **kwargs: Any) -> Any:
            counts[method] += 1
            return await real(*args, **kwargs)

        return run

    return replacement
