"""`cronpilot jobs …`."""

from __future__ import annotations

from cronpilot.adapters.bootstrap import build_clock
from cronpilot.adapters.cli.output import (
    OutputOption,
    add_row,
    new_table,
    note,
    pause_text,
    print_data,
    print_table,
)
from cronpilot.adapters.cli.runtime import admin_settings, with_store
from cronpilot.adapters.cli.views import job_view
from cronpilot.domain.pauses import holds
from cronpilot.usecases.queries import catalog


def list_jobs(
    output: OutputOption = None,
) -> None:
    """Every job with its planner mode and how many endpoints it holds."""
    jobs = with_store(admin_settings(), lambda store: catalog.list_jobs(store.reading))
    if output:
        print_data(output, [job_view(s.job, s.endpoint_count) for s in jobs])
        return
    if not jobs:
        note("no jobs yet; declare some with: cronpilot apply -f jobs.yaml")
        return
    now = build_clock().now()
    table = new_table(
        "Job", "Planner", "Endpoints", "Paused", "Description", wrap=("Paused", "Description")
    )
    for s in jobs:
        job = s.job
        paused = pause_text(job.pause, now) if holds(job.pause, now) else "no"
        add_row(
            table,
            job.name,
            job.planner_mode.value,
            str(s.endpoint_count),
            paused,
            job.description,
        )
    print_table(table)
