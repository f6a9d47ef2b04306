"""Narrow views of a store: the repositories one worker part uses, and no more.

A `Store` satisfies each of them structurally, so the composition root hands over the whole
store while the part's signature says what it touches (and what a test's fake must have). A
part that uses most of the repositories takes `Repositories` instead (housekeeping).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from cronpilot.domain.ports.catalog import CatalogRepository
    from cronpilot.domain.ports.claims import ClaimRepository
    from cronpilot.domain.ports.dag import DagRepository
    from cronpilot.domain.ports.notifications import NotificationRepository
    from cronpilot.domain.ports.planner import PlannerRepository
    from cronpilot.domain.ports.runs import RunRepository
    from cronpilot.domain.ports.units import ReadingUnit, UnitOfWork
    from cronpilot.domain.ports.workers import WorkerRepository


class SchedulerRepositories(Protocol):
    """What the scheduler worker claims through (`scheduler.worker.SchedulerWorker`): due
    slots, and DAG dependants ready to start."""

    @property
    def claims(self) -> ClaimRepository: ...

    @property
    def dag(self) -> DagRepository: ...


class NotifierRepositories(Protocol):
    """What the notifier delivers from (`scheduler.notifier.Notifier`): the outbox."""

    @property
    def notifications(self) -> NotificationRepository: ...


class WatchRepositories(Protocol):
    """What the watch reads and raises alerts into (`scheduler.watch.Watch`): the endpoints
    watched for missed runs, the workers registry, the outbox and its episodes."""

    @property
    def catalog(self) -> CatalogRepository: ...

    @property
    def notifications(self) -> NotificationRepository: ...

    @property
    def workers(self) -> WorkerRepository: ...


class ToolStore(Protocol):
    """What an analysis session's tools read (`planner.tools.ToolContext`): runs, and a
    snapshot for the endpoint search."""

    @property
    def runs(self) -> RunRepository: ...

    def reading(self) -> ReadingUnit:
        """A new read-only unit, not begun until entered (`Store.reading`)."""
        ...


class PlannerStore(ToolStore, Protocol):
    """What the planner worker uses (`planner.worker.PlannerWorker`): its own repository,
    units for its proposal desk and its reads, and what its sessions' tools read."""

    @property
    def planner(self) -> PlannerRepository: ...

    def unit_of_work(self) -> UnitOfWork:
        """A new unit of work, not begun until entered (`Store.unit_of_work`)."""
        ...
