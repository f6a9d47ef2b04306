"""`cronpilot jobs …`."""

from __future__ import annotations

from cronpilot.adapters.cli.output import (
    OutputOption,
    add_row,
    new_table,
    note,
    print_data,
    print_table,
)
from cronpilot.adapters.cli.runtime import admin_settings, with_store
from cronpilot.adapters.cli.views import job_view
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
    table = new_table("Job", "Planner", "Endpoints", "Description", wrap=("Description",))
    for s in jobs:
        job = s.job
        add_row(table, job.name, job.planner_mode.value, str(s.endpoint_count), job.description)
    print_table(table)
