"""The store and its units of work: every repository over one database, each method its own
transaction, or several on one transaction (`UnitOfWork`, `ReadingUnit`)."""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Protocol, Self

if TYPE_CHECKING:
    from cronpilot.domain.ports.access import AccessRepository
    from cronpilot.domain.ports.catalog import CatalogRepository
    from cronpilot.domain.ports.claims import ClaimRepository
    from cronpilot.domain.ports.dag import ApprovalRepository, DagRepository
    from cronpilot.domain.ports.graph import GraphRepository
    from cronpilot.domain.ports.notifications import NotificationRepository
    from cronpilot.domain.ports.planner import PlannerRepository
    from cronpilot.domain.ports.runs import RunRepository
    from cronpilot.domain.ports.schemas import SchemaRepository
    from cronpilot.domain.ports.search import VectorRepository
    from cronpilot.domain.ports.workers import WorkerRepository


class Repositories(Protocol):
    """The repositories over one database, as a `Store` or a `UnitOfWork` hands them out."""

    @property
    def catalog(self) -> CatalogRepository: ...

    @property
    def claims(self) -> ClaimRepository: ...

    @property
    def runs(self) -> RunRepository: ...

    @property
    def planner(self) -> PlannerRepository: ...

    @property
    def schemas(self) -> SchemaRepository: ...

    @property
    def graph(self) -> GraphRepository: ...

    @property
    def dag(self) -> DagRepository: ...

    @property
    def notifications(self) -> NotificationRepository: ...

    @property
    def workers(self) -> WorkerRepository: ...

    @property
    def access(self) -> AccessRepository: ...

    @property
    def approvals(self) -> ApprovalRepository: ...

    @property
    def vectors(self) -> VectorRepository: ...


class ReadingUnit(Repositories, Protocol):
    """The repositories on one read-only transaction, for a use case that reads several
    things and wants them consistent: `async with store.reading() as tx:`.

    Every read inside the block sees the same committed state (one snapshot), and none of
    them holds up writers: SQLite reads one WAL snapshot without its write lock, PostgreSQL
    runs a READ ONLY transaction at REPEATABLE READ; the memory store holds its lock, so
    writers wait for the block. A write through the unit's repositories raises
    `ReadOnlyUnit` (a bug in the caller) and writes nothing. A driver error raises as the
    repositories' methods do (`StoreUnavailable`, …)."""

    async def __aenter__(self) -> Self:
        """Begin the transaction. Raises `StoreUnavailable` when the store cannot be reached."""
        ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """End the transaction and give the connection back."""
        ...


class UnitOfWork(ReadingUnit, Protocol):
    """The repositories on one transaction, for a use case of several steps (cosmicpython's
    unit of work): `async with uow() as tx:` … `await tx.commit()`.

    Everything the repositories write inside the block is one atomic change: `commit` makes it
    all visible; leaving the block without `commit`, or by an exception, rolls it all back.
    Reads inside the block see the block's own writes. A unit is entered once; concurrent use
    cases each take their own. Inside a unit, call its repositories from the task that entered
    it (the memory store's unit holds the store's lock for that task).

    On SQL it is one connection with one transaction (SQLite takes its write lock up front);
    on memory it is the store's lock, held for the whole unit, and a copy of the state to put
    back on rollback. A driver error raises as the repositories' methods do
    (`StoreUnavailable`, `ConflictError`, …), from the body or from `commit`."""

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Roll back whatever was not committed and give the connection back."""
        ...

    async def commit(self) -> None:
        """Make the unit's writes visible, all at once. Call at most once, as its last step."""
        ...


UnitOfWorkFactory = Callable[[], UnitOfWork]
"""Starts a fresh unit of work on each call (`Store.unit_of_work`): what use cases are given."""


ReadingFactory = Callable[[], ReadingUnit]
"""Starts a fresh read-only unit on each call (`Store.reading`)."""


class Store(Repositories, Protocol):
    """One backend: the repositories over one database, each method its own transaction (the
    workers' hot path), and units of work for use cases that span several."""

    def unit_of_work(self) -> UnitOfWork:
        """A new unit of work on this store, not begun until entered."""
        ...

    def reading(self) -> ReadingUnit:
        """A new read-only unit on this store, not begun until entered."""
        ...

    async def close(self) -> None: ...
