"""`cronpilot export [--job J] > jobs.yaml`: the stored declarations as a jobs file."""

from __future__ import annotations

from typing import Annotated

import typer

from cronpilot.adapters.cli import completion
from cronpilot.adapters.cli.runtime import admin_settings, with_store
from cronpilot.usecases.declarations import export_declarations


def export(
    job: Annotated[
        str | None,
        typer.Option("--job", help="Only this job.", autocompletion=completion.job_names),
    ] = None,
    with_secrets: Annotated[
        bool,
        typer.Option(
            "--with-secrets",
            help="Write secret header and URL parameter values in clear instead of as "
            "${VARIABLE} references.",
        ),
    ] = False,
) -> None:
    """Print the declared jobs and endpoints as a jobs file that `apply -f` reads back
    unchanged. Secret values are `${VARIABLE}` references (listed at the top) unless
    --with-secrets."""
    # Here, not at the top: YAML is for this command only (`bench/cli_startup.py`).
    from cronpilot.adapters.jobs_export import export_document

    declarations = with_store(
        admin_settings(), lambda store: export_declarations(store.reading, job)
    )
    typer.echo(export_document(declarations, with_secrets=with_secrets), nl=False)
