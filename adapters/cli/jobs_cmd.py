"""`cronpilot jobs …`."""

from __future__ import annotations

from collections import Counter

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
from cronpilot.domain.model import Endpoint, Job
from cronpilot.domain.ports import Store


def list_jobs(
    output: OutputOption = None,
) -> None:
    """Every job with its planner mode and how many endpoints it holds."""

    async def act(store: Store) -> tuple[list[Job], list[Endpoint]]:
        return await store.catalog.list_jobs(), await store.catalog.list_endpoints()

    jobs, endpoints = with_store(admin_settings(), act)
    counts = Counter(endpoint.job_id for endpoint in endpoints)
    if output:
        print_data(output, [job_view(job, counts[job.id]) for job in jobs])
        return
    if not jobs:
        note("no jobs yet; declare some with: cronpilot apply -f jobs.yaml")
        return
    table = new_table("Job", "Planner", "Endpoints", "Description", wrap=("Description",))
    for job in jobs:
        add_row(table, job.name, job.planner_mode.value, str(counts[job.id]), job.description)
    print_table(table)
