"""`MemoryApprovals`: approval gates over the `MemoryState` dict, decided with the same domain
functions as the SQL store (`domain.planning.approvals.decided`, `domain.graph.dag.declined`)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING

from cronpilot.domain.errors import ApprovalNotFound
from cronpilot.domain.graph.dag import declined
from cronpilot.domain.ids import by_id_or_prefix
from cronpilot.domain.paging import Cursor, follows
from cronpilot.domain.planning.approvals import Approval, ApprovalState, decided, lapsed
from cronpilot.domain.ports import ApprovalRepository
from cronpilot.domain.runs.retention import approval_expired
from tests.support.memory_store.graph import dag_run_waits, save_plan

if TYPE_CHECKING:
    from tests.support.memory_store.store import MemoryState


class MemoryApprovals(ApprovalRepository):
    def __init__(self, state: MemoryState) -> None:
        self._state = state

    async def get_approval(self, approval_id: str) -> Approval:
        found = by_id_or_prefix("approval", approval_id, self._state.approvals)
        if found is None:
            raise ApprovalNotFound(approval_id)
        return found

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
        chosen = [
            a
            for a in self._state.approvals.values()
            if (state is None or a.state is state)
            and (job_id is None or a.job_id == job_id)
            and (job_ids is None or a.job_id in job_ids)
            and (endpoint_id is None or a.endpoint_id == endpoint_id)
            and follows(a.requested_at, a.id, after)
        ]
        chosen.sort(key=lambda a: (a.requested_at, a.id), reverse=True)
        return chosen[:limit]

    async def list_lapsed(self, now: datetime, limit: int) -> list[Approval]:
        due = [a for a in self._state.approvals.values() if lapsed(a, now)]
        return sorted(due, key=lambda a: (a.expires_at, a.id))[:limit]

    async def decide(
        self, approval_id: str, state: ApprovalState, by: str, reason: str | None, now: datetime
    ) -> Approval:
        async with self._state.lock:
            decision = decided(await self.get_approval(approval_id), state, by, reason, now)
            self._state.approvals[decision.id] = decision
            key = (decision.dag_run_id, decision.endpoint_id)
            if state is ApprovalState.APPROVED:
                wait = self._state.waits.get(key)
                if wait is not None:
                    self._state.waits[key] = replace(wait, ready=True)
            else:
                job = [e for e in self._state.endpoints.values() if e.job_id == decision.job_id]
                waits = dag_run_waits(self._state, decision.dag_run_id)
                save_plan(self._state, declined(job, waits, decision, now))
        return decision

    async def prune(self, before: datetime, limit: int) -> int:
        async with self._state.lock:
            doomed = sorted(
                (a for a in self._state.approvals.values() if approval_expired(a, before)),
                key=lambda a: (a.requested_at, a.id),
            )[: max(limit, 0)]
            for approval in doomed:
                del self._state.approvals[approval.id]
        return len(doomed)
