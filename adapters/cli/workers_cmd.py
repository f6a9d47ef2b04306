"""`cronpilot workers list`: the scheduler workers heard from lately."""

from __future__ import annotations

from datetime import datetime

from cronpilot.adapters.bootstrap import build_clock
from cronpilot.adapters.cli.listing import Listing
from cronpilot.adapters.cli.output import OutputOption
from cronpilot.adapters.cli.runtime import admin_settings, with_store
from cronpilot.adapters.views.formats import relative
from cronpilot.adapters.views.workers import worker_view
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


_LISTING = Listing[WorkerActivity](
    empty="no workers heard from lately",
    columns=("Worker", "Host", "PID", "Last seen", "Runs/min", "Version"),
    row=_row,
    view=worker_view,
)
