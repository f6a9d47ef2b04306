"""How `apply --dry-run` says what would change: per job and endpoint, then per field, old →
new, with secrets masked as everywhere else."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import typer

from cronpilot.adapters.cli.output import OutputFormat, print_data
from cronpilot.adapters.views.declarations import changes_view, field_line
from cronpilot.domain.declaration_diff import (
    DeclarationChange,
    Outcome,
)


def print_changes(changes: Sequence[DeclarationChange], *, output: OutputFormat | None) -> None:
    if output:
        print_data(output, changes_view(changes))
        return
    for change in changes:
        typer.echo(f"{change.outcome.value:<10} {change.ref}")
        for item in change.fields:
            typer.echo(f"{'':<10}   {field_line(item)}")
    counts = Counter(change.outcome for change in changes)
    summary = ", ".join(
        f"{counts[outcome]} {label}"
        for outcome, label in (
            (Outcome.CREATE, "to create"),
            (Outcome.UPDATE, "to update"),
            (Outcome.UNCHANGED, "unchanged"),
            (Outcome.LEFT_ALONE, "left alone"),
        )
        if counts[outcome] or outcome is not Outcome.LEFT_ALONE
    )
    typer.echo(f"dry run: {summary}; nothing written")
