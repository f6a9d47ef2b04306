"""Runs as recorded: read, paged, cancelled, pruned."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from cronpilot.domain.model import Run, RunStatus, RunTrigger
    from cronpilot.domain.paging import Cursor
    from cronpilot.domain.schedule.time_range import TimeRange


@dataclass(frozen=True, slots=True)
class RunFilter:
    """Which runs a paged list holds: each field set narrows it."""

    job_id: str | None = None
    endpoint_id: str | None = None
    status: RunStatus | None = None
    trigger: RunTrigger | None = None
    within: TimeRange | None = None
    """Runs whose slot falls in it."""
    job_ids: frozenset[str] | None = None
    """Runs of these jobs only (a caller's reach)."""


class RunRepository(Protocol):
    async def list_runs(
        self, endpoint_id: str, limit: int = 50, offset: int = 0, since: datetime | None = None
    ) -> list[Run]:
        """Runs of one endpoint, newest slot first; only those of slots from `since` when
        given (on PostgreSQL only the days since are read)."""
        ...

    async def page_runs(
        self, where: RunFilter, limit: int, after: Cursor | None = None
    ) -> list[Run]:
        """Up to `limit` runs matching `where`, newest (slot, id) first, each strictly after
        `after` in that order (keyset paging: `Cursor(run.slot_at, run.id)` of the last run
        of the page before)."""
        ...

    async def get_run(self, run_id: str) -> Run:
        """Raises `RunNotFound`."""
        ...

    async def dag_run_runs(self, dag_run_id: str) -> list[Run]:
        """The runs of one DAG run: the run that began it (its trace id is `dag_run_id`) and
        its dependants' runs, oldest start first."""
        ...

    async def ask_cancel(self, asked: Run, status: RunStatus) -> bool:
        """Write what a cancel changes of `asked` (`domain.runs.cancelling.cancel_asked`: status,
        end, message, who asked) if the stored run's status is still `status`; False when it
        moved meanwhile (a worker started or finished it), and nothing is written."""
        ...

    async def latest_runs(self, endpoint_ids: Sequence[str]) -> dict[str, Run]:
        """The newest finished-or-running run of each endpoint that has one."""
        ...

    async def prune(self, keep_per_endpoint: int) -> int:
        """Delete all but the newest `keep_per_endpoint` finished runs of each endpoint; never
        deletes a `running` or `queued` run. Returns how many were deleted."""
        ...

    async def prune_before(self, before: datetime, limit: int) -> int:
        """Delete up to `limit` finished runs whose slot is before `before`, oldest first;
        how many were deleted."""
        ...

    async def roll_history(self, today: date, keep_from: date) -> int:
        """Where the history is kept a day at a time (PostgreSQL's partitions): make sure the
        days from `today` on are ready, and drop the days before `keep_from` whole. Returns the
        runs dropped, as estimated (0 where the history is not kept by day)."""
        ...

    async def slots_taken(self, endpoint_id: str, start: datetime, end: datetime) -> set[datetime]:
        """The slots in [start, end] that have a run of the endpoint, whatever its status."""
        ...

    async def newest_finished_slot(self, job_id: str) -> datetime | None:
        """The newest slot of the finished runs of the job's endpoints (all of them), or None
        when none has finished (the slot `domain.planning.planning.needs_analysis` compares)."""
        ...
