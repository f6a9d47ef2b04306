"""What every tool is handed: the store, the waker, the clock, the settings that shape input,
and the desks that decide proposals and approvals."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from cronpilot.domain.ports import Clock, Embedder, Store, Waker
from cronpilot.usecases.approvals import ApprovalDesk
from cronpilot.usecases.proposals import ProposalDesk
from cronpilot.usecases.search import SERVED_FRESH_SECONDS, IndexCache


@dataclass(frozen=True, slots=True)
class McpContext:
    store: Store
    waker: Waker
    clock: Clock
    allowed_networks: Sequence[str]
    floor_seconds: float
    desk: ProposalDesk
    approvals: ApprovalDesk
    embedder: Embedder | None = None
    """Search's semantic leg (None: lexical and graph only)."""
    search_cache: IndexCache = field(default_factory=lambda: IndexCache(SERVED_FRESH_SECONDS))
