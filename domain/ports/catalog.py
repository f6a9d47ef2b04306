"""The catalog: jobs and endpoints as declared (a jobs file applied), and their schedule state."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from cronpilot.domain.model import Endpoint, EndpointSpec, Job, Pause
    from cronpilot.domain.schedule.limits import Limit, LimitStatus


@dataclass(frozen=True, slots=True)
class JobDeclaration:
    job: Job
    endpoints: Sequence[EndpointSpec]
    limits: Sequence[Limit] = ()
    """The limits its endpoints name (`EndpointSpec.limit`), stored with them."""


@dataclass(slots=True)
class ApplyReport:
    """Refs (`job` or `job/endpoint`) by what an apply did with them."""

    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    absent: list[str] = field(default_factory=list)
    """`job/endpoint` refs stored under a declared job but not declared: left alone, not
    deleted, reported so that a user can see what the file no longer mentions."""


@dataclass(frozen=True, slots=True)
class StoredJob:
    """A job as stored, with every endpoint it holds."""

    job: Job
    endpoints: Sequence[Endpoint]


@dataclass(slots=True)
class Applied:
    """What an apply writes, and what it reports."""

    report: ApplyReport = field(default_factory=ApplyReport)
    new_jobs: list[Job] = field(default_factory=list)
    changed_jobs: list[Job] = field(default_factory=list)
    """Stored jobs whose declared fields changed (their ids and pauses kept)."""
    new_endpoints: list[Endpoint] = field(default_factory=list)
    changed_endpoints: list[Endpoint] = field(default_factory=list)
    """Stored endpoints whose spec changed, their runtime state kept and re-planned."""
    limits: list[Limit] = field(default_factory=list)
    """Stored by key: bounds replaced, what claims recorded (tokens, holds) kept."""


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

    async def declared_jobs(self, names: Collection[str]) -> list[StoredJob]:
        """The stored jobs of these names (those that exist), each with every endpoint it
        holds, held against other writers until the unit of work ends: what an apply decides
        from (`domain.declaring.applied`)."""
        ...

    async def save_applied(self, applied: Applied) -> None:
        """Write what `domain.declaring.applied` decided, in one write: new jobs and endpoints
        inserted, changed ones saved whole (specs and sealed secrets); the limits stored by key,
        their bounds replaced and what claims recorded (tokens, holds) kept."""
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

    async def save_schedule(self, endpoint: Endpoint) -> None:
        """Save the endpoint's schedule state as the domain decided it (hints, pause, next run
        and slot, failures, lease), its declared spec left as stored. Raises
        `EndpointNotFound`."""
        ...

    async def set_job_pause(self, name: str, pause: Pause | None, now: datetime) -> Job:
        """Pause the job `name` (or resume it with None at `now`); its endpoints keep their own
        pauses and plans, and the claim skips them while the job's pause holds
        (`domain.schedule.pauses.job_holds`). A resume re-plans the endpoints the pause held
        (`transitions.job_resumed`: slots passed meanwhile are skipped), in the same write.
        Returns the updated job; raises `JobNotFound`."""
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
