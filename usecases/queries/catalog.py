"""Jobs and endpoints as declared, with what the scheduler knows of them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, TypeVar

from cronpilot.domain.access.access import EVERY_JOB, Reach
from cronpilot.domain.errors import JobNotFound
from cronpilot.domain.model import Endpoint, Job, Run
from cronpilot.domain.paging import Name, NamedPage, named_page
from cronpilot.domain.ports import ReadingFactory, Repositories
from cronpilot.domain.schedule.limits import LimitStatus
from cronpilot.usecases.queries.reach import reached_endpoint, reached_job, reached_jobs


@dataclass(frozen=True, slots=True)
class JobSummary:
    job: Job
    endpoint_count: int


@dataclass(frozen=True, slots=True)
class EndpointState:
    endpoint: Endpoint
    last_run: Run | None
    """Its newest finished-or-running run."""
    last_analysed_at: datetime | None = None
    """When a planner pass last looked at it (`show_endpoint` only): "last looked at"."""
    changes: str | None = None
    """How often it changes and how fresh its interval keeps the copy (`show_endpoint`
    only, `domain.planning.change_rate.change_text`)."""
    limit: LimitStatus | None = None
    """The limit it counts against, with its calls in flight and its hold (`show_endpoint`
    only)."""


async def list_jobs(reading: ReadingFactory, *, reach: Reach = EVERY_JOB) -> list[JobSummary]:
    """Every job in reach by name, with how many endpoints it holds."""
    async with reading() as read:
        jobs = await reached_jobs(read, reach)
        endpoints = await read.catalog.list_endpoints()
    counts: dict[str, int] = {}
    for endpoint in endpoints:
        counts[endpoint.job_id] = counts.get(endpoint.job_id, 0) + 1
    return [JobSummary(job, counts.get(job.id, 0)) for job in jobs]


async def page_jobs(
    reading: ReadingFactory, limit: int, after: Name | None, *, reach: Reach = EVERY_JOB
) -> NamedPage[JobSummary]:
    """A page of `list_jobs`, by name, after the job named `after`."""
    jobs = await list_jobs(reading, reach=reach)
    return named_page(jobs, limit, after, lambda summary: (summary.job.name,))


async def show_job(
    reading: ReadingFactory, name: str, *, reach: Reach = EVERY_JOB
) -> tuple[Job, list[Endpoint]]:
    """Raises `JobNotFound`."""
    async with reading() as read:
        job = await reached_job(read, name, reach)
        return job, await read.catalog.list_endpoints(name)


async def job_named(reading: ReadingFactory, ref: str) -> Job | None:
    """The job that `ref` names, or None: a ref with `/` names an endpoint, and one without
    names a job when a job has that name (else it may be an endpoint id)."""
    if "/" in ref:
        return None
    async with reading() as read:
        try:
            return await read.catalog.get_job(ref)
        except JobNotFound:
            return None


async def _endpoints(read: Repositories, job: str | None, reach: Reach) -> list[Endpoint]:
    """By (job, name), of `job` (raises `JobNotFound`) or of every job in reach."""
    if job is not None:
        await reached_job(read, job, reach)
    return [e for e in await read.catalog.list_endpoints(job) if reach.holds(e.job_name)]


async def list_endpoints(
    reading: ReadingFactory, job: str | None = None, *, reach: Reach = EVERY_JOB
) -> list[EndpointState]:
    """By (job, name), optionally of one job (raises `JobNotFound`)."""
    async with reading() as read:
        endpoints = await _endpoints(read, job, reach)
        latest = await read.runs.latest_runs([e.id for e in endpoints])
    return [EndpointState(e, latest.get(e.id)) for e in endpoints]


async def page_endpoints(
    reading: ReadingFactory,
    job: str | None,
    limit: int,
    after: Name | None,
    *,
    reach: Reach = EVERY_JOB,
) -> NamedPage[EndpointState]:
    """A page of `list_endpoints`, by (job, name), after the endpoint named `after`; the last
    runs are read for the page's endpoints only."""
    async with reading() as read:
        endpoints = await _endpoints(read, job, reach)
        page = named_page(endpoints, limit, after, lambda e: (e.job_name, e.spec.name))
        latest = await read.runs.latest_runs([e.id for e in page.items])
    return NamedPage([EndpointState(e, latest.get(e.id)) for e in page.items], page.next_after)


CHANGE_RUNS = 100
"""The newest runs `show_endpoint` estimates the change rate from."""


async def show_endpoint(
    reading: ReadingFactory, ref: str, now: datetime | None = None, *, reach: Reach = EVERY_JOB
) -> EndpointState:
    """By id or `job/endpoint`; raises `EndpointNotFound`. Given `now`, with how often it
    changes (`changes`)."""
    async with reading() as read:
        endpoint = await reached_endpoint(read, ref, reach)
        latest = await read.runs.latest_runs([endpoint.id])
        looked = await read.planner.last_analysed(endpoint.id)
        newest = [] if now is None else await read.runs.list_runs(endpoint.id, CHANGE_RUNS)
        key = endpoint.spec.limit
        limits = [] if key is None else await read.catalog.limits()
    # Imported here: the estimator (and the change detection it builds on) is for this sheet
    # alone, and listing endpoints does without it (tests/e2e/test_cli_startup.py).
    from cronpilot.domain.planning.change_rate import change_text

    changes = None if now is None else change_text(endpoint, newest, now)
    limit = next((status for status in limits if status.state.key == key), None)
    return EndpointState(endpoint, latest.get(endpoint.id), looked, changes, limit)


async def list_limits(
    reading: ReadingFactory, job: str | None = None, *, reach: Reach = EVERY_JOB
) -> list[LimitStatus]:
    """Every stored limit by key with its calls in flight and hold; of one job (raises
    `JobNotFound`) or of a reach short of every job, only the keys their endpoints name."""
    async with reading() as read:
        statuses = await read.catalog.limits()
        if job is None and reach.whole:
            return statuses
        named = {e.spec.limit for e in await _endpoints(read, job, reach)}
    return [status for status in statuses if status.state.key in named]


async def endpoint_refs(reading: ReadingFactory, *, reach: Reach = EVERY_JOB) -> dict[str, str]:
    """Endpoint id → `job/endpoint` of the endpoints in reach, for listings that hold ids."""
    async with reading() as read:
        return {e.id: e.ref for e in await _endpoints(read, None, reach)}


class OnEndpoint(Protocol):
    @property
    def endpoint_id(self) -> str: ...


E = TypeVar("E", bound=OnEndpoint)


async def beside_refs(reading: ReadingFactory, items: Sequence[E]) -> list[tuple[E, str]]:
    """Each of `items` beside its endpoint's `job/endpoint` (`?` for one deleted since)."""
    refs = await endpoint_refs(reading)
    return [(item, refs.get(item.endpoint_id, "?")) for item in items]


async def ref_of(reading: ReadingFactory, item: OnEndpoint) -> str:
    """`item`'s endpoint's `job/endpoint` (`?` for one deleted since)."""
    return (await beside_refs(reading, [item]))[0][1]
