"""`cronpilot approvals …`: DAG dependants waiting for an admin (`approval: required`), and the
admin's decision."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import typer

from cronpilot.adapters.bootstrap import build_approval_desk, build_clock
from cronpilot.adapters.cli.identity import actor
from cronpilot.adapters.cli.listing import (
    EndpointFilter,
    JobFilter,
    LimitOption,
    Listing,
    Referenced,
    with_endpoint_refs,
)
from cronpilot.adapters.cli.output import OutputOption, print_data
from cronpilot.adapters.cli.runtime import admin_settings, with_store, with_waker
from cronpilot.adapters.views.approvals import approval_view
from cronpilot.adapters.views.formats import clock_time, short_id
from cronpilot.domain.planning.approvals import Approval, ApprovalState
from cronpilot.domain.ports import Store, Waker
from cronpilot.usecases.queries import catalog
from cronpilot.usecases.queries.approvals import list_approvals as approvals_page

ApprovalId = Annotated[
    str, typer.Argument(help="An approval id from `approvals list`, or a unique prefix of one.")
]
Reason = Annotated[str | None, typer.Option(help="Why, for the audit trail.")]


def list_approvals(
    state: Annotated[
        ApprovalState | None, typer.Option(help="Only approvals in this state.")
    ] = None,
    job: JobFilter = None,
    endpoint: EndpointFilter = None,
    limit: LimitOption = 50,
    output: OutputOption = None,
) -> None:
    """Approvals, newest first: which dependant waits, until when, and what became of it."""
    found = with_endpoint_refs(
        lambda reading: approvals_page(
            reading, state=state, job=job, endpoint=endpoint, limit=limit
        )
    )
    _LISTING.show(found, output)


def _row(entry: Referenced[Approval], now: datetime) -> list[str]:
    a, ref = entry
    return [
        short_id(a.id),
        ref,
        a.state.value,
        clock_time(a.requested_at, now),
        clock_time(a.expires_at, now),
        a.decided_by or "",
        a.reason or "",
    ]


_LISTING = Listing[Referenced[Approval]](
    empty="no approvals",
    columns=("Approval", "Endpoint", "State", "Asked", "Expires", "By", "Reason"),
    row=_row,
    view=lambda entry: approval_view(*entry),
    wrap=("Reason",),
)


def approve(approval_id: ApprovalId, reason: Reason = None, output: OutputOption = None) -> None:
    """Let a waiting dependant run: a scheduler worker starts it within
    CRONPILOT_DAG_SWEEP_SECONDS."""
    _decide(ApprovalState.APPROVED, approval_id, reason, output)


def reject(approval_id: ApprovalId, reason: Reason = None, output: OutputOption = None) -> None:
    """Skip a waiting dependant (and what follows it); the skip records who and why."""
    _decide(ApprovalState.REJECTED, approval_id, reason, output)


def _decide(
    state: ApprovalState, approval_id: str, reason: str | None, output: OutputOption
) -> None:
    why = " ".join(reason.split()) if reason is not None else None
    if why == "":
        raise typer.BadParameter("must not be empty", param_hint="--reason")
    settings = admin_settings()

    async def act(store: Store) -> tuple[Approval, str]:
        async def decide(waker: Waker) -> Approval:
            desk = build_approval_desk(store, waker)
            now = build_clock().now()
            if state is ApprovalState.APPROVED:
                return await desk.approve(approval_id, actor(), why, now)
            return await desk.reject(approval_id, actor(), why, now)

        decided = await with_waker(settings, decide)
        return decided, await catalog.ref_of(store.reading, decided)

    decided, ref = with_store(settings, act)
    if output:
        print_data(output, approval_view(decided, ref))
        return
    typer.echo(f"{decided.state.value} {decided.id} for {ref}" + (f": {why}" if why else ""))
