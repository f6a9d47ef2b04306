"""DAG runs and their approval gates: dependants waiting for their parents."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from cronpilot.domain.graph.dag import DagWait
    from cronpilot.domain.model import Claim, Run
    from cronpilot.domain.paging import Cursor
    from cronpilot.domain.planning.approvals import Approval, ApprovalState


class DagRepository(Protocol):
    """DAG runs: dependants waiting for their parents, started as children of their runs."""

    async def claim_ready(
        self, now: datetime, worker_id: str, lease_seconds: float, limit: int
    ) -> list[Claim]:
        """Start up to `limit` ready waits whose endpoint is no longer leased."""
        ...

    async def add_ready(self, wait: DagWait) -> None:
        """Store `wait` (ready: every parent arrived) in place of any wait of its endpoint in
        its DAG run: a sweep (`claim_ready`) starts its endpoint once free."""
        ...

    async def list_waits(self) -> list[DagWait]:
        """Every open wait, by (dag run, endpoint id)."""
        ...

    async def drop_stale_waits(self, created_before: datetime) -> int:
        """Delete waits made before `created_before`: a parent that never finishes (its worker
        died during the call, and the reaper abandoned its run) leaves one that nothing
        completes. A wait held for a pending approval stays: its approval's expiry ends it.
        Returns how many were deleted."""
        ...

    async def trace_neighbours(self, run: Run) -> tuple[Run | None, Run | None]:
        """For a child run: its parent run (by `parent_trace_id`) and the sibling (same
        parent) that started just before it, each None when absent or pruned."""
        ...


class ApprovalRepository(Protocol):
    """Approval gates (`domain.planning.approvals`). An approval is written with the run whose
    report made its dependant ready (`ClaimRepository.finish_many`); here it is read and decided."""

    async def get_approval(self, approval_id: str) -> Approval:
        """By id or a unique prefix of one. Raises `ApprovalNotFound` (or `AmbiguousId`)."""
        ...

    async def list_approvals(
        self,
        state: ApprovalState | None = None,
        job_id: str | None = None,
        endpoint_id: str | None = None,
        limit: int = 100,
        after: Cursor | None = None,
        *,
        job_ids: Collection[str] | None = None,
    ) -> list[Approval]:
        """Newest request first (ids descending within one time), optionally filtered
        (`job_ids`: of those jobs only); with
        `after`, those that follow it (`domain.paging.follows`)."""
        ...

    async def list_lapsed(self, now: datetime, limit: int) -> list[Approval]:
        """Up to `limit` pending approvals whose `expires_at` is at or before `now`, the
        earliest expiry first."""
        ...

    async def decide(
        self, approval_id: str, state: ApprovalState, by: str, reason: str | None, now: datetime
    ) -> Approval:
        """Decide a pending approval (by id or prefix) in one transaction, recording who, when
        and why. Approved: its dependant's wait becomes ready, for `DagRepository.claim_ready`
        to start. Rejected or expired: the wait ends in a recorded skip that its own dependants
        hear of (`domain.graph.dag.declined`). Raises `ApprovalNotFound`, or `ApprovalNotPending`
        when it was decided already (by someone faster, too)."""
        ...

    async def prune(self, before: datetime, limit: int) -> int:
        """Delete up to `limit` decided approvals asked for before `before`
        (`domain.runs.retention.approval_expired`: never a pending one), oldest first, in one
        transaction; returns how many."""
        ...
