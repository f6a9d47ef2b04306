"""`cronpilot delete REF`: a job or an endpoint, with everything recorded of it."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from cronpilot.adapters.bootstrap import build_clock
from cronpilot.adapters.cli import completion
from cronpilot.adapters.cli.identity import actor
from cronpilot.adapters.cli.output import OutputFormat, OutputOption, print_data
from cronpilot.adapters.cli.runtime import admin_settings, with_store
from cronpilot.domain.errors import InvalidConfig
from cronpilot.usecases.deletion import Deleted
from cronpilot.usecases.deletion import delete as delete_ref


def delete(
    ref: Annotated[
        str,
        typer.Argument(
            help="A job name, or `job/endpoint`.", autocompletion=completion.graph_nodes
        ),
    ],
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Delete without asking for confirmation.")
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Say what would be deleted; delete nothing.")
    ] = False,
    output: OutputOption = None,
) -> None:
    """Delete a job (and its endpoints) or one endpoint, with their runs, proposals, analysis
    sessions, output schemas, notifications and graph edges, after a confirmation (--yes
    skips it; without a terminal it is required). Refused for an endpoint that others depend
    on. To stop an endpoint but keep its history, pause it instead."""
    settings = admin_settings()

    def deleting(dry: bool) -> Deleted:
        return with_store(
            settings,
            lambda store: delete_ref(
                store.unit_of_work, ref, actor(), build_clock().now(), dry_run=dry
            ),
        )

    if dry_run or not yes:
        planned = deleting(dry=True)
        if dry_run:
            _report(planned, output, "would delete")
            return
        _confirm(planned)
    _report(deleting(dry=False), output, "deleted")


def _what(deleted: Deleted) -> str:
    refs = ", ".join(deleted.endpoints) or "no endpoint"
    return f"job {deleted.job} ({refs})" if deleted.job is not None else refs


def _confirm(planned: Deleted) -> None:
    what = _what(planned)
    if not sys.stdin.isatty():
        raise InvalidConfig(
            f"delete {what}",
            "no terminal to confirm on: pass --yes (or --dry-run to see what would go)",
        )
    typer.confirm(
        f"Delete {what}, with every run, proposal and session recorded of it?",
        abort=True,
        err=True,
    )


def _report(deleted: Deleted, output: OutputFormat | None, done: str) -> None:
    if output:
        print_data(output, {"job": deleted.job, "endpoints": deleted.endpoints})
        return
    if deleted.job is not None:
        typer.echo(f"{done} job {deleted.job}")
    for endpoint in deleted.endpoints:
        typer.echo(f"{done} {endpoint}")
