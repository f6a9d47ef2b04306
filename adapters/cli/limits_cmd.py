"""`cronpilot limits list`: each limit's bounds, its calls in flight and what it holds back."""

from __future__ import annotations

from datetime import datetime

from cronpilot.adapters.bootstrap import build_clock
from cronpilot.adapters.cli.listing import JobFilter, Listing
from cronpilot.adapters.cli.output import OutputOption
from cronpilot.adapters.cli.runtime import admin_settings, with_store
from cronpilot.adapters.views.formats import clock_time
from cronpilot.adapters.views.limits import limit_status_view
from cronpilot.domain.ports import Store
from cronpilot.domain.schedule.limits import LimitStatus
from cronpilot.usecases.queries.catalog import list_limits


def list_all(job: JobFilter = None, output: OutputOption = None) -> None:
    """Limits by key: concurrency, rate and burst, calls in flight, and the slots the last
    claim held back (why, since when, when a claim may find room again)."""

    async def act(store: Store) -> list[LimitStatus]:
        return await list_limits(store.reading, job)

    _LISTING.show(with_store(admin_settings(), act), output, build_clock().now())


def _row(status: LimitStatus, now: datetime) -> list[str]:
    state, limit = status.state, status.state.limit
    reason = state.hold_reason if state.held else None
    return [
        limit.key,
        "-" if limit.concurrency is None else str(limit.concurrency),
        "-" if limit.rate is None else f"{limit.rate} (burst {limit.burst})",
        str(status.in_flight),
        str(state.held),
        "-" if reason is None else reason.value,
        "-" if reason is None or state.held_at is None else clock_time(state.held_at, now),
        "-" if state.open_at is None else clock_time(state.open_at, now),
    ]


_LISTING = Listing[LimitStatus](
    empty="no limits declared; see docs/limits.md",
    columns=("Key", "Concurrency", "Rate", "In flight", "Held", "Reason", "Since", "Opens"),
    row=_row,
    view=limit_status_view,
)
