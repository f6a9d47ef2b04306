"""`cronpilot audit list`: who changed what, newest first (the first page of `GET /audit`)."""

from __future__ import annotations

from typing import Annotated

import typer

from cronpilot.adapters.cli.listing import LimitOption, Listing
from cronpilot.adapters.cli.output import OutputOption
from cronpilot.adapters.cli.runtime import admin_settings, with_store
from cronpilot.adapters.cli.time_options import SinceOption, UntilOption, window
from cronpilot.adapters.views.audit import entry_view
from cronpilot.adapters.views.formats import clock_time
from cronpilot.domain.access.audit import AUDIT_ACTIONS, AuditEntry
from cronpilot.usecases.queries.audit import page_audit


def list_entries(
    actor: Annotated[
        str | None, typer.Option(help="Only this actor's: `token:ci`, `cli:ann@web-1`.")
    ] = None,
    action: Annotated[
        str | None,
        typer.Option(help=f"Only this kind of change: {', '.join(AUDIT_ACTIONS)}."),
    ] = None,
    limit: LimitOption = 50,
    *,
    since: SinceOption = None,
    until: UntilOption = None,
    output: OutputOption = None,
) -> None:
    """The audit log, newest first: every write, who made it, and on what."""
    if action is not None and action not in AUDIT_ACTIONS:
        raise typer.BadParameter(
            f"{action!r} is not one of {', '.join(AUDIT_ACTIONS)}", param_hint="--action"
        )
    within = window(since, until)

    entries = with_store(
        admin_settings(),
        lambda store: page_audit(
            store.reading, actor=actor, action=action, limit=limit, within=within
        ),
    )
    _LISTING.show(entries.items, output)


_LISTING = Listing[AuditEntry](
    empty="no audit entries",
    columns=("When", "Actor", "Action", "Target", "Detail"),
    row=lambda e, now: (clock_time(e.at, now), e.actor, e.action, e.target, e.detail),
    view=entry_view,
)
