"""A scheduler worker as scripts read it (`workers list --json`, `GET /workers`)."""

from __future__ import annotations

from typing import Any

from cronpilot.adapters.views.formats import iso
from cronpilot.domain.runs.workers import WorkerActivity


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
