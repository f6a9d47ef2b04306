"""An endpoint's schedule over the last hours or days, read in one snapshot: its runs, the
proposals applied to it and the pauses and resumes admins made."""

from __future__ import annotations

from datetime import datetime

from cronpilot.domain.access.access import EVERY_JOB, Reach
from cronpilot.domain.access.audit import AuditAction
from cronpilot.domain.model import Run
from cronpilot.domain.paging import Cursor
from cronpilot.domain.planning.planning import ProposalStatus
from cronpilot.domain.ports import ReadingFactory, RunFilter
from cronpilot.domain.schedule.timeline import Timeline, build_timeline
from cronpilot.usecases.queries.reach import reached_endpoint

MAX_RUNS = 2000
"""The newest runs drawn at most: a dot each, in a window a person looks at."""
MAX_CHANGES = 500
"""Applied proposals, and pause or resume entries of the audit log, read at most."""
_PAUSING: tuple[AuditAction, ...] = ("pause", "resume")


async def endpoint_timeline(
    reading: ReadingFactory, ref: str, since: datetime, now: datetime, *, reach: Reach = EVERY_JOB
) -> Timeline:
    """Raises `EndpointNotFound`."""
    async with reading() as read:
        endpoint = await reached_endpoint(read, ref, reach)
        runs: list[Run] = []
        after: Cursor | None = None
        while len(runs) < MAX_RUNS:
            page = await read.runs.page_runs(RunFilter(endpoint_id=endpoint.id), 500, after)
            runs += [r for r in page if r.slot_at >= since]
            if len(page) < 500 or page[-1].slot_at < since:
                break
            after = Cursor(page[-1].slot_at, page[-1].id)
        proposals = await read.planner.list_proposals(
            status=ProposalStatus.APPLIED, endpoint_id=endpoint.id, limit=MAX_CHANGES
        )
        audited = [
            entry
            for action in _PAUSING
            for entry in await read.access.list_audit(action=action, limit=MAX_CHANGES)
            if entry.target == endpoint.ref
        ]
    return build_timeline(endpoint, runs[:MAX_RUNS], proposals, audited, start=since, now=now)
