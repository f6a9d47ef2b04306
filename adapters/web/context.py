"""What every route and console page is handed: the store, the waker, the clock, the settings
that shape input, and the token check."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Annotated

from fastapi import Depends, Request

from cronpilot.adapters.probes import Probes
from cronpilot.domain.access.access import Principal
from cronpilot.domain.ports import Clock, Embedder, Store, Waker
from cronpilot.usecases.approvals import ApprovalDesk
from cronpilot.usecases.proposals import ProposalDesk
from cronpilot.usecases.search import SERVED_FRESH_SECONDS, IndexCache

Authenticate = Callable[[str], Awaitable[Principal | None]]
"""A bearer token's secret → its principal, or None (no such token, or revoked)."""


@dataclass(frozen=True, slots=True)
class ApiContext:
    store: Store
    waker: Waker
    clock: Clock
    authenticate: Authenticate
    allowed_networks: Sequence[str]
    floor_seconds: float
    desk: ProposalDesk
    approvals: ApprovalDesk
    probes: Probes
    """/healthz, /readyz and /metrics of the API process."""
    embedder: Embedder | None = None
    """Search's semantic leg (None: lexical and graph only)."""
    search_cache: IndexCache = field(default_factory=lambda: IndexCache(SERVED_FRESH_SECONDS))
    worker_stale_seconds: float = 60
    """A worker not heard from for longer is not listed (`GET /workers`)."""


def context(request: Request) -> ApiContext:
    found: ApiContext = request.app.state.context
    return found


Context = Annotated[ApiContext, Depends(context)]
