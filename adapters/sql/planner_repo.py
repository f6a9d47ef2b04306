"""`PlannerRepository` over SQL: which endpoints need analysis (claimed with SKIP LOCKED on
PostgreSQL), analysis sessions and proposals. `now` always comes from the caller."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Select, and_, false, func, insert, literal, or_, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import RowMapping
from sqlalchemy.ext.asyncio import AsyncConnection

from adapters.sql.engine import Database
from adapters.sql.planner_rows import (
    proposal_from_row,
    proposal_values,
    session_from_row,
    session_values,
)
from adapters.sql.rows import endpoint_from_row, select_endpoints
from adapters.sql.tables import analysis_sessions, endpoints, jobs, planner_state, proposals, runs
from domain.errors import (
    AnalysisBusy,
    EndpointNotFound,
    LeaseLost,
    ProposalNotFound,
    ProposalNotPending,
    SessionNotFound,
)
from domain.model import PlannerMode, RunStatus
from domain.planning import (
    AnalysisClaim,
    AnalysisOutcome,
    AnalysisSession,
    Proposal,
    ProposalStatus,
    effective_mode,
)


def _newest_finished_slot() -> Any:
    """The newest finished run of the endpoint's job (siblings included)."""
    return (
        select(func.max(runs.c.slot_at))
        .where(runs.c.job_id == endpoints.c.job_id, runs.c.status != RunStatus.RUNNING.value)
        .scalar_subquery()
    )


def _candidates(now: datetime, limit: int) -> Select[Any]:
    """`domain.planning.needs_analysis`, in SQL."""
    newest = _newest_finished_slot()
    failing = endpoints.c.failure_count > 0
    state = planner_state.c
    return (
        select(state.endpoint_id)
        .join(endpoints, endpoints.c.id == state.endpoint_id)
        .join(jobs, jobs.c.id == endpoints.c.job_id)
        .where(
            func.coalesce(endpoints.c.planner_mode, jobs.c.planner_mode) != PlannerMode.OFF.value,
            or_(state.lease_until.is_(None), state.lease_until < now),
            or_(state.retry_at.is_(None), state.retry_at <= now),
            or_(
                and_(failing, state.seen_failing.is_(False)),
                and_(~failing, state.seen_failing.is_(True)),
                and_(
                    or_(state.next_analysis_at.is_(None), state.next_analysis_at <= now),
                    or_(
                        and_(state.seen_slot_at.is_(None), newest.is_not(None)),
                        newest > state.seen_slot_at,
                    ),
                ),
            ),
        )
        .order_by(state.next_analysis_at.asc().nulls_first(), state.endpoint_id)
        .limit(limit)
    )


def _select_claimed() -> Select[Any]:
    return (
        select_endpoints()
        .add_columns(
            jobs.c.planner_mode.label("job_planner_mode"),
            planner_state.c.llm_failures,
            planner_state.c.lease_owner.label("analysis_lease_owner"),
            planner_state.c.lease_until.label("analysis_lease_until"),
        )
        .join(planner_state, planner_state.c.endpoint_id == endpoints.c.id)
    )


def _claim_from_row(row: RowMapping) -> AnalysisClaim:
    # No cipher: the planner never sends requests, so header secrets stay sealed.
    endpoint = endpoint_from_row(row, None)
    mode = effective_mode(endpoint.spec.planner_mode, PlannerMode(row["job_planner_mode"]))
    return AnalysisClaim(endpoint, mode, row["analysis_lease_until"], row["llm_failures"])


class SqlPlanner:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def _ensure_states(self, conn: AsyncConnection) -> None:
        """Give every endpoint a planner_state row; racing workers insert nothing twice."""
        known = select(planner_state.c.endpoint_id).where(
            planner_state.c.endpoint_id == endpoints.c.id
        )
        missing = select(endpoints.c.id, false(), literal(0)).where(~known.exists())
        dialect_insert = pg_insert if self._db.dialect == "postgresql" else sqlite_insert
        await conn.execute(
            dialect_insert(planner_state)
            .from_select(
                [
                    planner_state.c.endpoint_id,
                    planner_state.c.seen_failing,
                    planner_state.c.llm_failures,
                ],
                missing,
            )
            .on_conflict_do_nothing(index_elements=[planner_state.c.endpoint_id])
        )

    async def claim_analyses(
        self, now: datetime, worker_id: str, lease_seconds: float, limit: int
    ) -> list[AnalysisClaim]:
        until = now + timedelta(seconds=lease_seconds)
        async with self._db.write() as conn:
            await self._ensure_states(conn)
            candidates = _candidates(now, limit)
            if self._db.dialect == "postgresql":
                # Two planners skip each other's rows instead of waiting or doubling up.
                candidates = candidates.with_for_update(of=planner_state, skip_locked=True)
            chosen = list((await conn.execute(candidates)).scalars())
            if not chosen:
                return []
            await conn.execute(
                update(planner_state)
                .where(planner_state.c.endpoint_id.in_(chosen))
                .values(lease_owner=worker_id, lease_until=until)
            )
            rows = await conn.execute(_select_claimed().where(endpoints.c.id.in_(chosen)))
            claims = {row["id"]: _claim_from_row(row) for row in rows.mappings()}
        return [claims[endpoint_id] for endpoint_id in chosen]

    async def claim_endpoint(
        self, endpoint_id: str, now: datetime, worker_id: str, lease_seconds: float
    ) -> AnalysisClaim:
        until = now + timedelta(seconds=lease_seconds)
        async with self._db.write() as conn:
            await self._ensure_states(conn)
            query = _select_claimed().where(endpoints.c.id == endpoint_id)
            row = (
                (await conn.execute(query.with_for_update(of=planner_state)))
                .mappings()
                .one_or_none()
            )
            if row is None:
                raise EndpointNotFound(endpoint_id)
            owner, lease_until = row["analysis_lease_owner"], row["analysis_lease_until"]
            if owner is not None and owner != worker_id and lease_until >= now:
                raise AnalysisBusy(f"{row['job_name']}/{row['name']}", owner)
            await conn.execute(
                update(planner_state)
                .where(planner_state.c.endpoint_id == endpoint_id)
                .values(lease_owner=worker_id, lease_until=until)
            )
        claim = _claim_from_row(row)
        return AnalysisClaim(claim.endpoint, claim.mode, until, claim.llm_failures)

    async def finish_analysis(
        self,
        claim: AnalysisClaim,
        worker_id: str,
        session: AnalysisSession,
        outcome: AnalysisOutcome,
        now: datetime,
    ) -> None:
        failures = claim.llm_failures + 1 if outcome.failed else 0
        async with self._db.write() as conn:
            result = await conn.execute(
                update(planner_state)
                .where(
                    planner_state.c.endpoint_id == claim.endpoint.id,
                    planner_state.c.lease_owner == worker_id,
                )
                .values(
                    seen_slot_at=outcome.seen_slot_at,
                    seen_failing=outcome.seen_failing,
                    next_analysis_at=outcome.next_analysis_at,
                    llm_failures=failures,
                    retry_at=outcome.next_analysis_at if outcome.failed else None,
                    lease_owner=None,
                    lease_until=None,
                )
            )
            if result.rowcount != 1:
                raise LeaseLost(claim.endpoint.id, worker_id)
            await conn.execute(insert(analysis_sessions).values(session_values(session)))

    async def add_proposal(self, proposal: Proposal) -> None:
        async with self._db.write() as conn:
            await conn.execute(insert(proposals).values(proposal_values(proposal)))

    async def get_proposal(self, proposal_id: str) -> Proposal:
        async with self._db.read() as conn:
            result = await conn.execute(select(proposals).where(proposals.c.id == proposal_id))
            row = result.mappings().one_or_none()
        if row is None:
            raise ProposalNotFound(proposal_id)
        return proposal_from_row(row)

    async def list_proposals(
        self,
        status: ProposalStatus | None = None,
        job_name: str | None = None,
        endpoint_id: str | None = None,
        limit: int = 100,
    ) -> list[Proposal]:
        query = (
            select(proposals)
            .join(jobs, jobs.c.id == proposals.c.job_id)
            .order_by(proposals.c.created_at.desc(), proposals.c.id)
            .limit(limit)
        )
        if status is not None:
            query = query.where(proposals.c.status == status.value)
        if job_name is not None:
            query = query.where(jobs.c.name == job_name)
        if endpoint_id is not None:
            query = query.where(proposals.c.endpoint_id == endpoint_id)
        async with self._db.read() as conn:
            return [proposal_from_row(row) for row in (await conn.execute(query)).mappings()]

    async def decide(
        self,
        proposal_id: str,
        status: ProposalStatus,
        decided_by: str,
        outcome: str,
        now: datetime,
    ) -> Proposal:
        async with self._db.write() as conn:
            # Conditional on `pending`: of two admins deciding at once, one wins.
            result = await conn.execute(
                update(proposals)
                .where(
                    proposals.c.id == proposal_id,
                    proposals.c.status == ProposalStatus.PENDING.value,
                )
                .values(status=status.value, decided_by=decided_by, decided_at=now, outcome=outcome)
                .returning(*proposals.c)
            )
            row = result.mappings().one_or_none()
        if row is None:
            raise ProposalNotPending(proposal_id, (await self.get_proposal(proposal_id)).status)
        return proposal_from_row(row)

    async def count_applied_since(self, endpoint_id: str, since: datetime) -> int:
        query = select(func.count()).where(
            proposals.c.endpoint_id == endpoint_id,
            proposals.c.status == ProposalStatus.APPLIED.value,
            proposals.c.decided_at >= since,
        )
        async with self._db.read() as conn:
            return int((await conn.execute(query)).scalar_one())

    async def expire_pending(self, now: datetime) -> int:
        async with self._db.write() as conn:
            result = await conn.execute(
                update(proposals)
                .where(
                    proposals.c.status == ProposalStatus.PENDING.value,
                    proposals.c.expires_at <= now,
                )
                .values(
                    status=ProposalStatus.EXPIRED.value,
                    decided_by="planner",
                    decided_at=now,
                    outcome="expired before anyone decided",
                )
            )
        return int(result.rowcount)

    async def get_session(self, session_id: str) -> AnalysisSession:
        async with self._db.read() as conn:
            result = await conn.execute(
                select(analysis_sessions).where(analysis_sessions.c.id == session_id)
            )
            row = result.mappings().one_or_none()
        if row is None:
            raise SessionNotFound(session_id)
        return session_from_row(row)

    async def list_sessions(
        self, endpoint_id: str | None = None, limit: int = 50
    ) -> list[AnalysisSession]:
        query = (
            select(analysis_sessions)
            .order_by(analysis_sessions.c.started_at.desc(), analysis_sessions.c.id)
            .limit(limit)
        )
        if endpoint_id is not None:
            query = query.where(analysis_sessions.c.endpoint_id == endpoint_id)
        async with self._db.read() as conn:
            return [session_from_row(row) for row in (await conn.execute(query)).mappings()]
