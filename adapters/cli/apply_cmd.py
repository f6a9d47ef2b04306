"""`cronpilot apply -f jobs.yaml`: declare jobs and endpoints, idempotently, all or nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cronpilot.adapters.bootstrap import build_clock
from cronpilot.adapters.cli.declaration_changes import print_changes
from cronpilot.adapters.cli.identity import actor
from cronpilot.adapters.cli.output import OutputOption, print_data
from cronpilot.adapters.cli.runtime import admin_settings, with_store, with_waker
from cronpilot.adapters.views.catalog import report_view
from cronpilot.adapters.views.schedules import cron_fires, fire_time, fires_view
from cronpilot.domain.ports import ApplyReport, Store
from cronpilot.usecases.declarations import apply_declarations, preview_declarations


def apply(
    file: Annotated[
        Path, typer.Option("--file", "-f", help="The jobs file (see adapters/examples).")
    ],
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="Say what would change, field by field, and write nothing."),
    ] = False,
    output: OutputOption = None,
) -> None:
    """Create or update the jobs and endpoints a file declares; validates everything first.

    Endpoints stored under a declared job but missing from the file are left alone (still
    scheduled) and listed; pause them to stop them."""
    # The jobs file's models (pydantic, YAML, the URL guard) are built on import: only the
    # commands that read one pay for them.
    from cronpilot.adapters.jobs_file import load_declarations

    settings = admin_settings()
    declarations = load_declarations(
        file, settings.allowed_networks, floor_seconds=settings.min_interval_seconds
    )
    if dry_run:
        preview = with_store(
            settings,
            lambda store: preview_declarations(store.reading, declarations, str(file)),
        )
        print_changes(preview.changes, output=output)
        return

    async def act(store: Store) -> ApplyReport:
        return await with_waker(
            settings,
            lambda waker: apply_declarations(
                store.unit_of_work,
                waker,
                declarations,
                str(file),
                actor=actor(),
                now=build_clock().now(),
            ),
        )

    report = with_store(settings, act)
    # What a created or changed cron will do, so that a wrong field shows before it fires.
    now = build_clock().now()
    schedules = {
        f"{declared.job.name}/{spec.name}": spec.schedule
        for declared in declarations
        for spec in declared.endpoints
    }
    fires = {
        ref: (schedules[ref], cron_fires(schedules[ref], now))
        for ref in report.created + report.updated
        if ref in schedules and schedules[ref].cron is not None
    }
    if output:
        print_data(
            output,
            {
                **report_view(report),
                "next_fires": {
                    ref: fires_view(times, schedule.timezone)
                    for ref, (schedule, times) in fires.items()
                },
            },
        )
        return
    for outcome, refs in (("created", report.created), ("updated", report.updated)):
        for ref in refs:
            typer.echo(f"{outcome:<9} {ref}")
            if ref in fires:
                schedule, times = fires[ref]
                for moment in times:
                    typer.echo(f"{'':<9}   fires {fire_time(moment, schedule.timezone)}")
    # Not deleted, on purpose: say so, or a user who removed an endpoint from the file would
    # believe it stopped running.
    for ref in report.absent:
        typer.echo(f"left alone (not in {file}): {ref}")
    typer.echo(
        f"{len(report.created)} created, {len(report.updated)} updated, "
        f"{len(report.unchanged)} unchanged"
        + (f", {len(report.absent)} left alone" if report.absent else "")
    )
