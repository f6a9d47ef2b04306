"""`cronpilot jobs …`."""

from __future__ import annotations

from typing import Annotated

import typer

from cronpilot.adapters.bootstrap import build_clock
from cronpilot.adapters.cli import completion
from cronpilot.adapters.cli.output import (
    OutputOption,
    add_row,
    details_table,
    new_table,
    note,
    print_data,
    print_table,
)
from cronpilot.adapters.cli.runtime import admin_settings, with_store
from cronpilot.adapters.views.catalog import job_view
from cronpilot.adapters.views.formats import span
from cronpilot.adapters.views.schedules import pause_text
from cronpilot.domain.schedule.pauses import holds
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


def show(
    name: Annotated[str, typer.Argument(help="A job's name.", autocompletion=completion.job_names)],
    output: OutputOption = None,
) -> None:
    """One job: its description, planner mode, pause, and its endpoints with their next run."""
    job, endpoints = with_store(
        admin_settings(), lambda store: catalog.show_job(store.reading, name)
    )
    if output:
        view = job_view(job, len(endpoints)) | {"endpoint_refs": [e.ref for e in endpoints]}
        print_data(output, view)
        return
    now = build_clock().now()
    cooldown = job.rejection_cooldown_seconds
    print_table(
        details_table(
            [
                ("job", job.name),
                ("id", job.id),
                ("description", job.description or "-"),
                ("planner", job.planner_mode.value),
                ("rejection cool-down", "the default" if cooldown is None else span(cooldown)),
                ("budget", job.budget or "what the declared schedules make"),
                ("paused", pause_text(job.pause, now) if holds(job.pause, now) else "no"),
                ("endpoints", ", ".join(e.spec.name for e in endpoints) or "-"),
            ]
        )
    )
