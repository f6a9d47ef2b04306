"""The scheduler's hot path: claiming due slots, finishing them fenced, reaping the dead."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from cronpilot.domain.errors import CronpilotError
    from cronpilot.domain.model import Claim, Finish, Recorded, Run


class ClaimRepository(Protocol):
    """The distributed heart: claiming due slots, finishing them fenced, reaping the dead."""

    async def claim_due(
        self,
        now: datetime,
        worker_id: str,
        lease_seconds: float,
        limit: int,
        due_by: datetime | None = None,
    ) -> list[Claim]:
        """Atomically lease up to `limit` unleased endpoints due by `due_by` (default `now`;
        later to claim slots ahead of time), earliest `next_run_at` first, and insert a
        `running` run for each slot. The lease runs from `now`. Concurrent callers never get
        the same endpoint. A slot that already has a run is not claimed again.

        Queued runs (`enqueue`) come first: an unleased endpoint with a queued run due by
        `due_by` is leased and its earliest queued run turned `running` (one per endpoint per
        call); the claim carries it in `Claim.queued`. A queued run of a leased endpoint waits."""
        ...

    async def enqueue(self, queued: Sequence[Run]) -> list[Run]:
        """Insert `queued` runs (status `queued`, see `domain.runs.transitions.queued_run`) in one
        transaction, leaving out each whose slot already has a run of its endpoint, whatever
        that run's status (the slot key). Returns the runs inserted, in order."""
        ...

    async def extend_lease(self, claim: Claim, worker_id: str, until: datetime) -> None:
        """Push the lease further for a long run. Raises `LeaseLost` if it is no longer ours."""
        ...

    async def finish_many(self, finishes: Sequence[Finish]) -> list[Recorded | CronpilotError]:
        """Record each finish, fenced on its own: complete the run, re-plan the endpoint
        (`after_slot`, which may auto-pause it), add the notifications the run raises to the
        outbox (`domain.alerts.alerts.run_notifications`) and, for an endpoint with dependants,
        report the run to them as `domain.graph.dag.advance` says (save waits, record skipped runs,
        lease and start every dependant now ready whose endpoint is free; a ready one that is leased
        stays a ready wait for `DagRepository.claim_ready`; store the approvals gated dependants ask
        for, with their notifications), all in the transaction of its run, so a
        worker dying in between cannot record the run and lose its DAG run. In as few
        transactions as the store allows (callers batch: group commit).

        Returns, in order, each finish's `Recorded` or its error: `LeaseLost` (nothing written)
        when the lease or the run is no longer ours, `StoreUnavailable` when its transaction
        failed; one item's error never stops the others. Raises only for a bug."""
        ...

    async def release(self, claim: Claim, worker_id: str) -> None:
        """Give back a claim whose call never started: delete its `running` run (a claimed
        queued run goes back to `queued`, as it was) and free the lease, keeping `next_run_at`
        so another worker runs the slot. No-op if not ours."""
        ...

    async def abandon(self, claim: Claim, worker_id: str, reason: str, now: datetime) -> None:
        """Mark an interrupted run `abandoned` (shutdown), free the lease and re-plan.
        No-op if not ours."""
        ...

    async def cancel(self, claim: Claim, worker_id: str, now: datetime) -> None:
        """Record a run cut short on a cancel `cancelled` (`domain.runs.cancelling.cancelled_run`),
        free the lease and re-plan. No-op if not ours."""
        ...

    async def cancels_asked(self, run_ids: Collection[str]) -> set[str]:
        """Which of `run_ids` (runs this worker holds) someone asked to cancel
        (`Run.cancel_requested_by`): one read, by key."""
        ...

    async def reap(self, now: datetime) -> int:
        """Mark `running` runs whose lease has expired `abandoned`, free their endpoints and
        re-plan them (`domain.runs.transitions.after_reap`). Queued runs are not touched. Returns
        how many runs were reaped."""
        ...

    async def next_due_at(self) -> datetime | None:
        """The earliest `next_run_at` among unleased endpoints, or `due_at` among the queued
        runs of unleased endpoints, or None."""
        ...
