"""`cronpilot delete REF`: a job or an endpoint, with everything recorded of it."""

from __future__ import annotations

from typing import Annotated

import typer

from cronpilot.adapters.bootstrap import build_clock
from cronpilot.adapters.cli import completion
from cronpilot.adapters.cli.identity import actor
from cronpilot.adapters.cli.output import OutputOption, print_data
from cronpilot.adapters.cli.runtime import admin_settings, with_store
from cronpilot.usecases.deletion import delete as delete_ref


def delete(
    ref: Annotated[
        str,
        typer.Argument(
            help="A job name, or `job/endpoint`.", autocompletion=completion.graph_nodes
        ),
    ],
    output: OutputOption = None,
) -> None:
    """Delete a job (and its endpoints) or one endpoint, with their runs, proposals, analysis
    sessions, output schemas, notifications and graph edges. Refused for an endpoint that
    others depend on. To stop an endpoint but keep its history, pause it instead."""
    deleted = with_store(
        admin_settings(),
        lambda store: delete_ref(store.unit_of_work, ref, actor(), build_clock().now()),
    )
    if output:
        print_data(output, {"job": deleted.job, "endpoints": deleted.endpoints})
        return
    if deleted.job is not None:
        typer.echo(f"deleted job {deleted.job}")
    for endpoint in deleted.endpoints:
        typer.echo(f"deleted {endpoint}")
