"""The approval desk: an admin's decision on a gated DAG dependant (`domain.planning.approvals`),
and the expiry of those nobody decided in time. Each decision is one unit of work with its audit
entry; the CLI, the API and the scheduler's housekeeping all come through here."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Literal

from cronpilot.domain.access.audit import audit_entry
from cronpilot.domain.errors import ApprovalNotPending
from cronpilot.domain.log_extra import log_extra
from cronpilot.domain.planning.approvals import EXPIRED_BY, Approval, ApprovalState, lapsed
from cronpilot.domain.ports import ReadingFactory, Telemetry, UnitOfWorkFactory, Waker
from cronpilot.domain.runs.telemetry import NO_TELEMETRY

log = logging.getLogger(__name__)

EXPIRY_BATCH = 100
"""The most approvals one round of housekeeping expires; the rest wait for the next round."""
_ACTIONS: dict[ApprovalState, Literal["approve", "reject"]] = {
    ApprovalState.APPROVED: "approve",
    ApprovalState.REJECTED: "reject",
}


class ApprovalDesk:
    def __init__(
        self,
        uow: UnitOfWorkFactory,
        reading: ReadingFactory,
        waker: Waker | None,
        *,
        telemetry: Telemetry = NO_TELEMETRY,
    ) -> None:
        self._uow = uow
        self._reading = reading
        """For finding the lapsed approvals: housekeeping asks every round, and mostly none
        are due, so it takes no write lock to learn that."""
        self._waker = waker
        self._telemetry = telemetry

    async def approve(
        self, approval_id: str, actor: str, reason: str | None, now: datetime
    ) -> Approval:
        """Let the waiting dependant run: a scheduler worker starts it as the child of the run
        it follows (`DagRepository.claim_ready`), and is woken for it. See `_decide`."""
        decided = await self._decide(approval_id, ApprovalState.APPROVED, actor, reason, now)
        if self._waker is not None:
            await self._waker.notify()
        return decided

    async def reject(
        self, approval_id: str, actor: str, reason: str | None, now: datetime
    ) -> Approval:
        """Skip the waiting dependant (and what follows it), recording who and why. See
        `_decide`."""
        return await self._decide(approval_id, ApprovalState.REJECTED, actor, reason, now)

    async def _decide(
        self,
        approval_id: str,
        state: ApprovalState,
        actor: str,
        reason: str | None,
        now: datetime,
    ) -> Approval:
        """Decide a pending approval (an id or a unique prefix) for `actor`, audited. One past
        its expiry is expired instead, and `ApprovalNotPending` raised, as for one decided
        already. Raises `ApprovalNotFound`."""
        async with self._uow() as tx:
            approval = await tx.approvals.get_approval(approval_id)
            late = lapsed(approval, now)
            if late:
                state, actor, reason = ApprovalState.EXPIRED, EXPIRED_BY, None
            decided = await tx.approvals.decide(approval.id, state, actor, reason, now)
            ref = (await tx.catalog.get_endpoint(decided.endpoint_id)).ref
            if not late:
                detail = f"{state.value} {ref}" + (f": {reason}" if reason else "")
                await tx.access.record(audit_entry(actor, _ACTIONS[state], decided.id, detail, now))
            await tx.commit()
        self._telemetry.approval_decided(state)
        if late:
            raise ApprovalNotPending(decided.id, state)
        log.info(
            "approval %s of %s %s by %s",
            decided.id,
            ref,
            state.value,
            actor,
            extra=log_extra(_ACTIONS[state], approval_id=decided.id, endpoint=ref),
        )
        return decided

    async def expire_lapsed(self, now: datetime) -> list[Approval]:
        """Expire the pending approvals whose time is up, each in a unit of its own: its
        dependant's wait ends in a recorded skip. One decided meanwhile is left as decided."""
        async with self._reading() as tx:
            due = await tx.approvals.list_lapsed(now, EXPIRY_BATCH)
        expired = []
        for approval in due:
            try:
                async with self._uow() as tx:
                    decided = await tx.approvals.decide(
                        approval.id, ApprovalState.EXPIRED, EXPIRED_BY, None, now
                    )
                    await tx.commit()
            except ApprovalNotPending:
                continue
            expired.append(decided)
            self._telemetry.approval_decided(ApprovalState.EXPIRED)
        if expired:
            log.info(
                "expired %d approvals nobody decided in time",
                len(expired),
                extra=log_extra("approval_expired", count=len(expired)),
            )
        return expired
