"""The catalog: jobs and endpoints as declared (`apply`), and their schedule state."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from cronpilot.domain.model import Endpoint, EndpointSpec, IntervalHint, Job, OneShotHint, Pause
    from cronpilot.domain.schedule.limits import Limit, LimitStatus


@dataclass(frozen=True, slots=True)
class JobDeclaration:
    job: Job
    endpoints: Sequence[EndpointSpec]
    limits: Sequence[Limit] = ()
    """The limits its endpoints name (`EndpointSpec.limit`), stored by `apply` with them."""


@dataclass(slots=True)
class ApplyReport:
    """Refs (`job` or `job/endpoint`) by what `apply` did with them."""

    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    absent: list[str] = field(default_factory=list)
    """`job/endpoint` refs stored under a declared job but not declared: left alone, not
    deleted, reported so that a user can see what the file no longer mentions."""


@dataclass(frozen=True, slots=True)
class CatalogFigures:
    """Counts over the whole catalog at one instant, for gauges read at scrape time."""

    due: int
    """Endpoints due now that no worker holds (`domain.runs.claiming.is_due`): the backlog."""
    queued_due: int
    """Queued runs (manual, backfill) whose `due_at` has come."""
    hints_active: int
    """Endpoints with an interval or one-shot hint that has not expired."""


class CatalogRepository(Protocol):
    """Jobs and endpoints as declared, plus their runtime schedule state."""

    async def apply(self, declarations: Sequence[JobDeclaration], now: datetime) -> ApplyReport:
        """Create or update every job and endpoint in one transaction (all or nothing).

        Matching is by job name and (job, endpoint name); ids of existing rows are kept, runtime
        state (hints, pause, failures, last slot) survives, the next run is re-planned. Jobs and
        endpoints absent from `declarations` are left alone; endpoints of a declared job that
        are not declared are reported `absent` (by name order within each job). Applying the
        same declarations twice reports everything `unchanged` the second time.

        The limits the declarations carry (`JobDeclaration.limits`) are stored by key, their
        bounds replaced and what claims recorded (tokens, holds) kept.
        """
        ...

    async def limits(self) -> list[LimitStatus]:
        """Every stored limit by key, with its endpoints leased now (its calls in flight)."""
        ...

    async def list_jobs(self) -> list[Job]:
        """All jobs ordered by name."""
        ...

    async def get_job(self, name: str) -> Job:
        """Raises `JobNotFound`."""
        ...

    async def list_endpoints(self, job_name: str | None = None) -> list[Endpoint]:
        """Endpoints ordered by (job name, endpoint name), optionally of one job."""
        ...

    async def get_endpoint(self, ref: str, *, for_update: bool = False) -> Endpoint:
        """By id or by `job/endpoint`; raises `EndpointNotFound`.

        `for_update` holds the endpoint against other writers until the unit of work ends
        (PostgreSQL's row lock; SQLite's write unit and the memory store's unit already hold
        every other writer off): for a decision that a concurrent writer could make stale."""
        ...

    async def figures(self, now: datetime) -> CatalogFigures:
        """The catalog's counts at `now`, in one read."""
        ...

    async def set_pause(self, endpoint_id: str, pause: Pause | None, now: datetime) -> Endpoint:
        """Pause (or resume with None) and re-plan; returns the updated endpoint.

        Raises `EndpointNotFound`."""
        ...

    async def set_job_pause(self, name: str, pause: Pause | None, now: datetime) -> Job:
        """Pause the job `name` (or resume it with None at `now`); its endpoints keep their own
        pauses and plans, and the claim skips them while the job's pause holds
        (`domain.schedule.pauses.job_holds`). A resume re-plans the endpoints the pause held
        (`transitions.job_resumed`: slots passed meanwhile are skipped), in the same write.
        Returns the updated job; raises `JobNotFound`."""
        ...

    async def set_hints(
        self,
        endpoint_id: str,
        interval_hint: IntervalHint | None,
        oneshot_hint: OneShotHint | None,
        now: datetime,
    ) -> Endpoint:
        """Replace both hints and re-plan; returns the updated endpoint.

        Raises `EndpointNotFound`."""
        ...

    async def set_volatile_fields(self, endpoint_id: str, fields: Sequence[str]) -> None:
        """Record the fields of the endpoint's responses learnt volatile (canonical paths,
        `domain.graph.change_detection.volatile_fields`) in place of those recorded before; nothing
        else of the endpoint changes. Raises `EndpointNotFound`."""
        ...

    async def delete_endpoints(self, endpoint_ids: Collection[str]) -> None:
        """Delete the endpoints and everything recorded of them: runs (queued and running
        ones too), proposals, analysis sessions and planner state, output schema and drift,
        DAG waits, notifications. Graph edges are kept by node name: see
        `GraphRepository.forget`. Unknown ids are ignored."""
        ...

    async def delete_job(self, name: str) -> None:
        """Delete the job with its endpoints (as `delete_endpoints`). Raises `JobNotFound`."""
        ...
