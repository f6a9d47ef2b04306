"""A caller's reach applied where its queries read (decision 0049): a list holds only what
belongs to the jobs in reach, and a name or id of anything else is answered as one nothing
answers to, by the same error with the same words, so that ids and names reveal nothing."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeAlias, TypeVar

from cronpilot.domain.access.access import Reach
from cronpilot.domain.errors import (
    AmbiguousId,
    ApprovalNotFound,
    EndpointNotFound,
    JobNotFound,
    NotificationNotFound,
    ProposalNotFound,
    RefNotFound,
    RunNotFound,
    SessionNotFound,
)
from cronpilot.domain.model import Endpoint, Job, Run
from cronpilot.domain.ports import ReadingFactory, Repositories

if TYPE_CHECKING:
    # Only their types: listing endpoints loads neither the planning nor the graph rules, and
    # listing proposals none of the alerts (tests/e2e/test_cli_startup.py).
    from cronpilot.domain.alerts.alerts import Notification
    from cronpilot.domain.graph.graph import Edge
    from cronpilot.domain.planning.approvals import Approval
    from cronpilot.domain.planning.planning import AnalysisSession, Proposal

T = TypeVar("T")


async def reached_jobs(read: Repositories, reach: Reach) -> list[Job]:
    """The jobs in reach, by name."""
    return [job for job in await read.catalog.list_jobs() if reach.holds(job.name)]


async def reached_job(read: Repositories, name: str, reach: Reach) -> Job:
    """Raises `JobNotFound`, for a job out of reach too."""
    if not reach.holds(name):
        raise JobNotFound(name)
    return await read.catalog.get_job(name)


async def reached_edges(read: Repositories, job: str | None, reach: Reach) -> list[Edge]:
    """The tool graph's edges with an end in `job` (None: every edge) whose two ends are in
    reach: an edge to another job's node would name it."""
    edges = await read.graph.list_edges(job)
    return [e for e in edges if reach.holds_node(e.from_node) and reach.holds_node(e.to_node)]


async def job_ids(
    read: Repositories, reach: Reach, job: str | None = None
) -> frozenset[str] | None:
    """The ids of the jobs a list may hold: the one named (raises `JobNotFound`, for one out
    of reach too), else those in reach; None: every job."""
    if job is not None:
        return frozenset({(await reached_job(read, job, reach)).id})
    if reach.whole:
        return None
    return frozenset(found.id for found in await reached_jobs(read, reach))


async def _reached(
    find: Callable[[str], Awaitable[T]],
    job_of: Callable[[T], Awaitable[str]],
    ref: str,
    reach: Reach,
    missing: type[RefNotFound],
) -> T:
    """What `find` finds for `ref` when its job is in reach, else `missing(ref)`. An id prefix
    several ids start with is resolved among those in reach: the others are not named."""
    try:
        found = await find(ref)
    except AmbiguousId as ambiguous:
        if reach.whole:
            raise
        inside = [c for c in ambiguous.candidates if reach.holds(await job_of(await find(c)))]
        if len(inside) > 1:
            raise AmbiguousId(ambiguous.kind, ambiguous.prefix, inside, more=False) from None
        if not inside:
            raise missing(ref) from None
        found = await find(inside[0])
    if not reach.holds(await job_of(found)):
        raise missing(ref)
    return found


async def reached_endpoint(read: Repositories, ref: str, reach: Reach) -> Endpoint:
    """By id (or a prefix) or `job/endpoint`; raises `EndpointNotFound`."""

    async def job_of(endpoint: Endpoint) -> str:
        return endpoint.job_name

    return await _reached(read.catalog.get_endpoint, job_of, ref, reach, EndpointNotFound)


Owned: TypeAlias = "Run | Proposal | AnalysisSession | Approval | Notification"
"""What belongs to an endpoint, by its `endpoint_id`."""


def _endpoint_job(read: Repositories) -> Callable[[Owned], Awaitable[str]]:
    async def job_of(item: Owned) -> str:
        return (await read.catalog.get_endpoint(item.endpoint_id)).job_name

    return job_of


async def reached_run(read: Repositories, run_id: str, reach: Reach) -> Run:
    """Raises `RunNotFound`."""
    return await _reached(read.runs.get_run, _endpoint_job(read), run_id, reach, RunNotFound)


async def reached_proposal(read: Repositories, proposal_id: str, reach: Reach) -> Proposal:
    """Raises `ProposalNotFound`."""
    find = read.planner.get_proposal
    return await _reached(find, _endpoint_job(read), proposal_id, reach, ProposalNotFound)


async def reached_session(read: Repositories, session_id: str, reach: Reach) -> AnalysisSession:
    """Raises `SessionNotFound`."""
    find = read.planner.get_session
    return await _reached(find, _endpoint_job(read), session_id, reach, SessionNotFound)


async def reached_approval(read: Repositories, approval_id: str, reach: Reach) -> Approval:
    """Raises `ApprovalNotFound`."""
    find = read.approvals.get_approval
    return await _reached(find, _endpoint_job(read), approval_id, reach, ApprovalNotFound)


async def reached_notification(
    read: Repositories, notification_id: str, reach: Reach
) -> Notification:
    """Raises `NotificationNotFound`."""
    find = read.notifications.get_notification
    return await _reached(find, _endpoint_job(read), notification_id, reach, NotificationNotFound)


async def check_target(
    reading: ReadingFactory,
    reach: Reach,
    *,
    job: str | None = None,
    endpoint: str | None = None,
    run: str | None = None,
    proposal: str | None = None,
    approval: str | None = None,
    notification: str | None = None,
) -> None:
    """Before a write: raises the not-found error of what it names (`job`, `endpoint` by ref
    or id, or the id of a `run`, `proposal`, `approval` or `notification`) when that is out
    of reach, as the write itself raises it for what does not exist."""
    if reach.whole:
        return
    async with reading() as read:
        if job is not None:
            await reached_job(read, job, reach)
        if endpoint is not None:
            await reached_endpoint(read, endpoint, reach)
        if run is not None:
            await reached_run(read, run, reach)
        if proposal is not None:
            await reached_proposal(read, proposal, reach)
        if approval is not None:
            await reached_approval(read, approval, reach)
        if notification is not None:
            await reached_notification(read, notification, reach)
