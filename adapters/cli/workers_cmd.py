"""`cronpilot workers list`: the scheduler workers heard from lately."""

from __future__ import annotations

from typing import Any

from cronpilot.adapters.bootstrap import build_clock
from cronpilot.adapters.cli.output import (
    OutputOption,
    add_row,
    iso,
    new_table,
    note,
    print_data,
    print_table,
    relative,
)
from cronpilot.adapters.cli.runtime import admin_settings, with_store
from cronpilot.domain.ports import Store
from cronpilot.domain.workers import WorkerActivity
from cronpilot.usecases.workers import active_workers


def list_workers(output: OutputOption = None) -> None:
    """Scheduler workers heard from within CRONPILOT_WORKER_STALE_SECONDS, most recently seen
    first: where each runs, its version, and how many runs it started in the last minute."""
    settings = admin_settings()
    now = build_clock().now()

    async def act(store: Store) -> list[WorkerActivity]:
        return await active_workers(store.reading, now, settings.worker_stale_seconds)

    found = with_store(settings, act)
    if output:
        print_data(output, [worker_view(activity) for activity in found])
        return
    if not found:
        note("no workers heard from lately")
        return
    table = new_table("Worker", "Host", "PID", "Last seen", "Runs/min", "Version")
    for activity in found:
        worker = activity.worker
        add_row(
            table,
            worker.id,
            worker.host,
            str(worker.pid),
            relative(worker.last_seen, now),
            str(activity.recent_runs),
            worker.version,
        )
    print_table(table)


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
