"""`cronpilot proposals …`: what the planner proposed, and an admin's approval or rejection."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import typer

from cronpilot.adapters.bootstrap import build_clock, build_proposal_desk, build_waker
from cronpilot.adapters.cli import completion
from cronpilot.adapters.cli.exit_codes import EXIT_FAILED
from cronpilot.adapters.cli.identity import actor
from cronpilot.adapters.cli.listing import (
    JobFilter,
    LimitOption,
    Listing,
    Referenced,
    with_endpoint_refs,
)
from cronpilot.adapters.cli.output import (
    OutputFormat,
    OutputOption,
    details_table,
    print_data,
    print_table,
)
from cronpilot.adapters.cli.runtime import admin_settings, with_store
from cronpilot.adapters.cli.time_options import SinceOption, UntilOption, window
from cronpilot.adapters.settings import Settings
from cronpilot.adapters.views.formats import clock_time, short_id
from cronpilot.adapters.views.planner import change_text, proposal_view
from cronpilot.domain.planning.planning import Proposal, ProposalStatus
from cronpilot.domain.ports import Store
from cronpilot.usecases.queries import catalog, planner

ProposalId = Annotated[
    str,
    typer.Argument(
        help="A proposal id from `proposals list`.", autocompletion=completion.proposal_ids
    ),
]


def list_proposals(
    status: Annotated[
        ProposalStatus | None, typer.Option(help="Only proposals in this state.")
    ] = None,
    job: JobFilter = None,
    limit: LimitOption = 50,
    *,
    since: SinceOption = None,
    until: UntilOption = None,
    output: OutputOption = None,
) -> None:
    """Proposals, newest first: the change, why, and what became of it."""
    within = window(since, until)
    found = with_endpoint_refs(
        lambda reading: planner.list_proposals(
            reading, status=status, job=job, limit=limit, within=within
        )
    )
    _LISTING.show(found, output)


def _row(entry: Referenced[Proposal], now: datetime) -> list[str]:
    p, ref = entry
    return [
        short_id(p.id),
        ref,
        change_text(p),
        p.status.value,
        p.proposed_by,
        clock_time(p.created_at, now),
        p.reason,
    ]


_LISTING = Listing[Referenced[Proposal]](
    empty="no proposals",
    columns=("Proposal", "Endpoint", "Change", "Status", "By", "When", "Reason"),
    row=_row,
    view=lambda entry: proposal_view(*entry),
    wrap=("Reason",),
)


def show(proposal_id: ProposalId, output: OutputOption = None) -> None:
    """One proposal in full: who proposed it in which session, who decided, the outcome."""

    async def act(store: Store) -> tuple[Proposal, str]:
        found = await planner.show_proposal(store.reading, proposal_id)
        return found, await catalog.ref_of(store.reading, found)

    _print_one(*with_store(admin_settings(), act), output)


def _print_one(proposal: Proposal, ref: str, output: OutputFormat | None) -> None:
    view = proposal_view(proposal, ref)
    if output:
        print_data(output, view)
        return
    rows = [
        (key.replace("_", " "), "-" if value is None else str(value)) for key, value in view.items()
    ]
    print_table(details_table(rows))


def approve(proposal_id: ProposalId, output: OutputOption = None) -> None:
    """Apply a pending proposal now (guardrails are checked again first)."""
    settings = admin_settings()
    decided, ref = with_store(settings, lambda store: _approve(settings, store, proposal_id))
    if decided.status is not ProposalStatus.APPLIED:
        typer.echo(f"error: proposal {decided.id} {decided.outcome}", err=True)
        raise typer.Exit(EXIT_FAILED)
    if output:
        print_data(output, proposal_view(decided, ref))
        return
    typer.echo(f"approved {decided.id} for {ref}: {change_text(decided)}; {decided.outcome}")


async def _approve(settings: Settings, store: Store, proposal_id: str) -> tuple[Proposal, str]:
    waker = build_waker(settings)
    try:
        desk = build_proposal_desk(settings, store, waker)
        decided = await desk.approve(proposal_id, actor(), build_clock().now())
    finally:
        await waker.close()
    return decided, await catalog.ref_of(store.reading, decided)


def reject(
    proposal_id: ProposalId,
    reason: Annotated[str, typer.Option(help="Why, for the audit trail.")],
    output: OutputOption = None,
) -> None:
    """Turn a pending proposal down, with a reason."""
    why = " ".join(reason.split())
    if not why:
        raise typer.BadParameter("must not be empty", param_hint="--reason")
    settings = admin_settings()

    async def act(store: Store) -> tuple[Proposal, str]:
        desk = build_proposal_desk(settings, store, None)
        decided = await desk.reject(proposal_id, actor(), why, build_clock().now())
        return decided, await catalog.ref_of(store.reading, decided)

    decided, ref = with_store(settings, act)
    if output:
        print_data(output, proposal_view(decided, ref))
        return
    typer.echo(f"rejected {decided.id} for {ref}: {why}")
