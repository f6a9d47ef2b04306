"""`ApprovalRepository` over SQL. Approvals are inserted by the finish that asks for them
(`dag_repo.save_plan`); here they are read and decided.

A decision is one transaction. The approval row is updated first, conditional on `pending`: of
two admins (or an admin and the expiry) deciding at once, the second waits on that row and then
finds it decided. A decline then locks the job's endpoints, in id order as finishes do, before
it ends the dependant's wait in a skip, so it never crosses a finish advancing the same DAG run.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime

from sqlalchemy import and_, select, update

from cronpilot.adapters.sql.dag_repo import dag_run_waits, lock_job, save_plan
from cronpilot.adapters.sql.engine import Database
from cronpilot.adapters.sql.keyset import newest_first
from cronpilot.adapters.sql.prefixes import read_by_id, row_by_id
from cronpilot.adapters.sql.retention import delete_oldest
from cronpilot.adapters.sql.rows import approval_from_row
from cronpilot.adapters.sql.tables import IS_PENDING_APPROVAL, approvals, dag_waits
from cronpilot.domain.errors import ApprovalNotFound, ApprovalNotPending
from cronpilot.domain.graph.dag import declined
from cronpilot.domain.paging import Cursor
from cronpilot.domain.planning.approvals import Approval, ApprovalState, decided
from cronpilot.domain.ports import ApprovalRepository


class SqlApprovals(ApprovalRepository):
    def __init__(self, db: Database) -> None:
        self._db = db

    async def get_approval(self, approval_id: str) -> Approval:
        row = await read_by_id(self._db, approvals, "approval", approval_id, ApprovalNotFound)
        return approval_from_row(row)

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
        query = newest_first(
            approvals,
            approvals.c.requested_at,
            after,
            state=state,
            job_id=job_id,
            endpoint_id=endpoint_id,
        )
        if job_ids is not None:
            query = query.where(approvals.c.job_id.in_(sorted(job_ids)))
        async with self._db.read() as conn:
            rows = (await conn.execute(query.limit(limit))).mappings().all()
        return [approval_from_row(row) for row in rows]

    async def list_lapsed(self, now: datetime, limit: int) -> list[Approval]:
        query = (
            select(approvals)
            .where(IS_PENDING_APPROVAL, approvals.c.expires_at <= now)
            .order_by(approvals.c.expires_at, approvals.c.id)
            .limit(limit)
        )
        async with self._db.read() as conn:
            rows = (await conn.execute(query)).mappings().all()
        return [approval_from_row(row) for row in rows]

    async def decide(
        self, approval_id: str, state: ApprovalState, by: str, reason: str | None, now: datetime
    ) -> Approval:
        async with self._db.write() as conn:
            row = await row_by_id(conn, approvals, "approval", approval_id, ApprovalNotFound)
            decision = decided(approval_from_row(row), state, by, reason, now)
            result = await conn.execute(
                update(approvals)
                .where(approvals.c.id == decision.id, IS_PENDING_APPROVAL)
                .values(state=state.value, decided_by=by, decided_at=now, reason=reason)
            )
            if result.rowcount != 1:
                now_is = select(approvals.c.state).where(approvals.c.id == decision.id)
                raise ApprovalNotPending(decision.id, (await conn.execute(now_is)).scalar_one())
            if state is ApprovalState.APPROVED:
                await conn.execute(
                    update(dag_waits)
                    .where(
                        dag_waits.c.dag_run_id == decision.dag_run_id,
                        dag_waits.c.endpoint_id == decision.endpoint_id,
                    )
                    .values(ready=True)
                )
            else:
                # Without the cipher: a skip reads the DAG, never the request's secrets (the
                # targets of the notifications it raises stay sealed as stored).
                job = await lock_job(conn, None, decision.job_id)
                waits = await dag_run_waits(conn, decision.dag_run_id)
                await save_plan(conn, declined(job, waits, decision, now), None)
        return decision

    async def prune(self, before: datetime, limit: int) -> int:
        # Mirrors `domain.runs.retention.approval_expired`; the index on (requested_at, id) serves.
        table = approvals.c
        where = and_(~IS_PENDING_APPROVAL, table.requested_at < before)
        oldest = (table.requested_at, table.id)
        return await delete_oldest(self._db, approvals, where, oldest, limit)
