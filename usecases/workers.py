"""Who is working: the scheduler workers heard from lately, for `cronpilot workers list`."""

from __future__ import annotations

from datetime import datetime

from cronpilot.domain.ports import ReadingFactory
from cronpilot.domain.runs.workers import RUNS_WINDOW, WorkerActivity, seen_since


async def active_workers(
    reading: ReadingFactory, now: datetime, stale_seconds: float
) -> list[WorkerActivity]:
    """Workers heard from within `stale_seconds` of `now`, most recently seen first, each with
    the runs it started in the last `RUNS_WINDOW`."""
    async with reading() as tx:
        return await tx.workers.list_active(seen_since(now, stale_seconds), now - RUNS_WINDOW)
