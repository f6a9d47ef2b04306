"""`cronpilot workers list`: the scheduler workers heard from lately."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from cronpilot.adapters.bootstrap import build_clock
from cronpilot.adapters.cli.listing import Listing
from cronpilot.adapters.cli.output import (
    OutputOption,
    iso,
    relative,
)
from cronpilot.adapters.cli.runtime import admin_settings, with_store
from cronpilot.domain.ports import Store
from cronpilot.domain.runs.workers import WorkerActivity
from cronpilot.usecases.workers import active_workers


def list_workers(output: OutputOption = None) -> None:
    """Scheduler workers heard from within CRONPILOT_WORKER_STALE_SECONDS, most recently seen
    first: where each runs, its version, and how many runs it started in the last minute."""
    settings = admin_settings()
    now = build_clock().now()

    async def act(store: Store) -> list[WorkerActivity]:
        return await active_workers(store.reading, now, settings.worker_stale_seconds)

    _LISTING.show(with_store(settings, act), output, now)


def _row(activity: WorkerActivity, now: datetime) -> list[str]:
    worker = activity.worker
    return [
        worker.id,
        worker.host,
        str(worker.pid),
        relative(worker.last_seen, now),
        str(activity.recent_runs),
        worker.version,
    ]


def worker_view(activity: WorkerActivity) -> dict[str, Any]:
    """The `--json` shape: keys are a stable interface for scripts."""
    worker = activity.worker
    return {
        "id": worker.id,
        "host": worker.host,
        "pid": worker.pid,
        "version": worker.version,
        "started_at": iso(worker.started_at),
        "last_seen": iso(worker.last_seen),
        "runs_last_minute": activity.recent_runs,
    }


_LISTING = Listing[WorkerActivity](
    empty="no workers heard from lately",
    columns=("Worker", "Host", "PID", "Last seen", "Runs/min", "Version"),
    row=_row,
    view=worker_view,
)
