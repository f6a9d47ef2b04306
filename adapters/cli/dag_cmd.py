"""`cronpilot dag clear`: re-run part of a DAG run, from a node down."""

from __future__ import annotations

from typing import Annotated

import typer

from cronpilot.adapters.bootstrap import build_clock
from cronpilot.adapters.cli.identity import actor
from cronpilot.adapters.cli.output import OutputOption, print_data
from cronpilot.adapters.cli.runtime import admin_settings, with_store, with_waker
from cronpilot.adapters.views.catalog import endpoint_view
from cronpilot.domain.model import Endpoint
from cronpilot.domain.ports import Store
from cronpilot.usecases.run_control import clear_dag


def clear(
    root_run: Annotated[
        str, typer.Argument(help="The run that began the DAG run (or any run of it), by id.")
    ],
    node: Annotated[
        str, typer.Option("--from", help="The endpoint (its name in the job) to re-run from.")
    ],
    output: OutputOption = None,
) -> None:
    """Re-run NODE and everything that depends on it in a DAG run, with the answers its
    upstreams gave in that DAG run; the upstreams are not called again."""
    settings = admin_settings()

    async def act(store: Store) -> Endpoint:
        return await with_waker(
            settings,
            lambda waker: clear_dag(
                store.unit_of_work, waker, root_run, node, actor=actor(), now=build_clock().now()
            ),
        )

    cleared = with_store(settings, act)
    if output:
        print_data(output, endpoint_view(cleared, None))
        return
    typer.echo(f"cleared {cleared.ref} and what depends on it; a scheduler re-runs them now")
