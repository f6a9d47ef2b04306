"""`PlannerRepository` over SQL: which endpoints need analysis (claimed with SKIP LOCKED on
PostgreSQL), analysis sessions and proposals. `now` always comes from the caller."""

from __future__ import annotations

import functools
from collections.abc import Collection, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from enum import Enum
from typing import TYPE_CHECKING, Any

from sqlalchemy import (
    ColumnElement,
    Insert,
    Select,
    String,
    Update,
    and_,
    bindparam,
    false,
    func,
    insert,
    literal,
    or_,
    select,
    update,
)
from sqlalchemy.engine import RowMapping
from sqlalchemy.ext.asyncio import AsyncConnection

from cronpilot.adapters.sql.engine import Database
from cronpilot.adapters.sql.keyset import after_cursor, in_window
from cronpilot.adapters.sql.planner_rows import (
    proposal_from_row,
    proposal_values,
    session_from_row,
    session_values,
    step_from_row,
    step_values,
)
from cronpilot.adapters.sql.prefixes import read_by_id
from cronpilot.adapters.sql.retention import delete_oldest
from cronpilot.adapters.sql.rows import endpoint_from_row, select_endpoints
from cronpilot.adapters.sql.rule_rows import streak_from_row
from cronpilot.adapters.sql.runs import newest_finished_slot
from cronpilot.adapters.sql.tables import (
    UtcDateTime,
    analysis_sessions,
    autonomy_steps,
    endpoints,
    jobs,
    planner_state,
    proposals,
)
from cronpilot.adapters.sql.upsert import conflict_insert
from cronpilot.domain.errors import (
    AnalysisBusy,
    EndpointNotFound,
    LeaseLost,
    ProposalNotFound,
    ProposalNotPending,
    SessionNotFound,
)
from cronpilot.domain.model import PlannerMode
from cronpilot.domain.paging import Cursor
from cronpilot.domain.planning.autonomy import AutonomyStep
from cronpilot.domain.planning.planning import (
    EXPIRED_BY,
    EXPIRED_OUTCOME,
    AnalysisClaim,
    AnalysisOutcome,
    AnalysisSession,
    PlannerState,
    Proposal,
    ProposalStatus,
    RulesPass,
    analysis_busy,
    effective_mode,
    superseding_outcome,
)
from cronpilot.domain.ports import PlannerRepository, SecretCipher
from cronpilot.domain.rules.rule_firing import RULES_PLANNER
from cronpilot.domain.schedule.time_range import TimeRange

if TYPE_CHECKING:
    from cronpilot.domain.alerts.alerts import Notification


def _analysis_due(now: datetime) -> ColumnElement[bool]:
    """Mirrors the analyst's part of `domain.planning.planning.needs_analysis`: not backing off, and
    a failure state that changed or new finished runs once the next analysis time has come."""
    newest = newest_finished_slot(endpoints.c.job_id)
    failing = endpoints.c.failure_count > 0
    state = planner_state.c
    return and_(
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


def _rules_due() -> ColumnElement[bool]:
    """Mirrors the rules' part of `domain.planning.planning.needs_rules`: rules, and finished runs
    of the job that they have not seen."""
    newest = newest_finished_slot(endpoints.c.job_id)
    seen = planner_state.c.rules_seen_slot_at
    return and_(
        endpoints.c.rules.is_not(None),
        or_(and_(seen.is_(None), newest.is_not(None)), newest > seen),
    )


def _candidates(now: datetime, limit: int) -> Select[Any]:
    """Mirrors `domain.planning.planning.needs_analysis` or `needs_rules` in `analysis_order`: kept
    in SQL so that PostgreSQL locks (SKIP LOCKED) only the rows it leases, in the one statement
    that finds them (proven by `tests/contract/test_rules_contract.py::
    test_a_planner_claims_what_needs_analysis`)."""
    state = planner_state.c
    return (
        select(state.endpoint_id)
        .join(endpoints, endpoints.c.id == state.endpoint_id)
        .join(jobs, jobs.c.id == endpoints.c.job_id)
        .where(
            func.coalesce(endpoints.c.planner_mode, jobs.c.planner_mode) != PlannerMode.OFF.value,
            or_(state.lease_until.is_(None), state.lease_until < now),
            or_(_analysis_due(now), _rules_due()),
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
            planner_state.c.rule_held,
            planner_state.c.rule_holding,
            planner_state.c.rule_holding_since,
            planner_state.c.lease_owner.label("analysis_lease_owner"),
            planner_state.c.lease_until.label("analysis_lease_until"),
        )
        .join(planner_state, planner_state.c.endpoint_id == endpoints.c.id)
    )


class _By(Enum):
    """How a ref names an endpoint: by id, or as `job/name`."""

    ID = "id"
    NAME = "name"


def _named(by: _By) -> ColumnElement[bool]:
    """The endpoint a ref names: bound `id`, or bound `job` and `name` (`job/name`)."""
    if by is _By.ID:
        return endpoints.c.id == bindparam("id", type_=String)
    # Not correlated: the claim's own FROM holds `jobs` too.
    job_id = select(jobs.c.id).where(jobs.c.name == bindparam("job", type_=String)).correlate(None)
    return and_(
        endpoints.c.job_id == job_id.scalar_subquery(),
        endpoints.c.name == bindparam("name", type_=String),
    )


def _ref_parameters(ref: str) -> tuple[_By, dict[str, str]]:
    job, slash, name = ref.partition("/")
    return (_By.NAME, {"job": job, "name": name}) if slash else (_By.ID, {"id": ref})


@functools.cache
def _ensure_states_statement(dialect: str, by: _By | None) -> Insert:
    """Give every endpoint (or the one named, see `_named`) a planner_state row; racing
    workers insert nothing twice."""
    known = select(planner_state.c.endpoint_id).where(planner_state.c.endpoint_id == endpoints.c.id)
    missing = select(endpoints.c.id, false(), literal(0)).where(~known.exists())
    if by is not None:
        missing = missing.where(_named(by))
    return (
        conflict_insert(dialect, planner_state)
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


@functools.cache
def _claim_one_statement(by: _By) -> Select[Any]:
    return _select_claimed().where(_named(by)).with_for_update(of=planner_state)


async def _lock_one(conn: AsyncConnection, by: _By, named: dict[str, str]) -> RowMapping | None:
    """The named endpoint's claim row, its planner_state locked; None without that row."""
    result = await conn.execute(_claim_one_statement(by), named)
    row: RowMapping | None = result.mappings().one_or_none()
    return row


@functools.cache
def _lease_one_statement() -> Update:
    return (
        update(planner_state)
        .where(planner_state.c.endpoint_id == bindparam("id", type_=String))
        .values(
            lease_owner=bindparam("worker_id", type_=String),
            lease_until=bindparam("until", type_=UtcDateTime),
        )
    )


@functools.cache
def _applied_statement() -> Select[Any]:
    """The count of the endpoint's (bound `id`) proposals applied since bound `since`."""
    return select(func.count()).where(
        proposals.c.endpoint_id == bindparam("id", type_=String),
        proposals.c.status == ProposalStatus.APPLIED.value,
        proposals.c.decided_at >= bindparam("since", type_=UtcDateTime),
    )


_ANALYSIS_COLUMNS = ("seen_slot_at", "seen_failing", "next_analysis_at", "llm_failures", "retry_at")
_RULES_COLUMNS = ("rules_seen_slot_at", "rule_held", "rule_holding", "rule_holding_since")


@functools.cache
def _finish_statement(analysed: bool, ruled: bool) -> Update:
    """The planner state a pass leaves, fenced on the lease (bound `id`, `worker_id` and the
    new values, named `new_<column>`: SQLAlchemy keeps the column names for itself): the
    analyst's columns when it looked, the rules' when they were evaluated."""
    columns = (_ANALYSIS_COLUMNS if analysed else ()) + (_RULES_COLUMNS if ruled else ())
    return (
        update(planner_state)
        .where(
            planner_state.c.endpoint_id == bindparam("id", type_=String),
            planner_state.c.lease_owner == bindparam("worker_id", type_=String),
        )
        .values(
            {
                **{
                    name: bindparam(f"new_{name}", type_=planner_state.c[name].type)
                    for name in columns
                },
                "lease_owner": None,
                "lease_until": None,
                "last_analysed_at": bindparam("now", type_=UtcDateTime),
            }
        )
    )


@functools.cache
def _finish_postgres_statement(analysed: bool, ruled: bool) -> Insert:
    """`_finish_statement` and the session's INSERT as one statement (one round trip, atomic
    without a transaction block): the session row is inserted only if the fenced update freed
    a lease, so a row count of 0 means the lease was lost and nothing was written. The
    session's values are bound as `session_<column>`."""
    freed = _finish_statement(analysed, ruled).returning(planner_state.c.endpoint_id).cte("freed")
    columns = list(analysis_sessions.c)
    session = select(*(bindparam(f"session_{c.name}", type_=c.type) for c in columns))
    return insert(analysis_sessions).from_select(columns, session.select_from(freed)).add_cte(freed)


def _claim_from_row(row: RowMapping, analysis_due: bool = True) -> AnalysisClaim:
    # No cipher: the planner never sends requests, so header secrets stay sealed.
    endpoint = endpoint_from_row(row, None)
    mode = effective_mode(endpoint.spec.planner_mode, PlannerMode(row["job_planner_mode"]))
    return AnalysisClaim(
        endpoint,
        mode,
        row["analysis_lease_until"],
        row["llm_failures"],
        analysis_due=analysis_due,
        rule_held=row["rule_held"],
        rule_streak=streak_from_row(row),
    )


class SqlPlanner(PlannerRepository):
    def __init__(self, db: Database, cipher: SecretCipher | None) -> None:
        self._db = db
        self._cipher = cipher
        """Seals the secrets of the targets that proposals notify."""

    async def claim_analyses(
        self, now: datetime, worker_id: str, lease_seconds: float, limit: int
    ) -> list[AnalysisClaim]:
        until = now + timedelta(seconds=lease_seconds)
        async with self._db.write() as conn:
            await conn.execute(_ensure_states_statement(self._db.dialect, None))
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
            claimed = _select_claimed().add_columns(_analysis_due(now).label("analysis_due"))
            rows = await conn.execute(claimed.where(endpoints.c.id.in_(chosen)))
            claims = {
                row["id"]: _claim_from_row(row, bool(row["analysis_due"]))
                for row in rows.mappings()
            }
        return [claims[endpoint_id] for endpoint_id in chosen]

    async def claim_endpoint(
        self, ref: str, now: datetime, worker_id: str, lease_seconds: float
    ) -> AnalysisClaim:
        until = now + timedelta(seconds=lease_seconds)
        by, named = _ref_parameters(ref)
        async with self._db.write() as conn:
            row = await _lock_one(conn, by, named)
            if row is None:
                # Never analysed: give it its planner_state row, then lock that.
                await conn.execute(_ensure_states_statement(self._db.dialect, by), named)
                row = await _lock_one(conn, by, named)
            if row is None:
                raise EndpointNotFound(ref)
            held = PlannerState(
                row["id"],
                lease_owner=row["analysis_lease_owner"],
                lease_until=row["analysis_lease_until"],
            )
            if analysis_busy(held, worker_id, now):
                raise AnalysisBusy(f"{row['job_name']}/{row['name']}", row["analysis_lease_owner"])
            await conn.execute(
                _lease_one_statement(),
                {"id": row["id"], "worker_id": worker_id, "until": until},
            )
        return replace(_claim_from_row(row), lease_until=until)

    async def finish_analysis(
        self,
        claim: AnalysisClaim,
        worker_id: str,
        session: AnalysisSession | None,
        outcome: AnalysisOutcome | None,
        now: datetime,
        *,
        rules: RulesPass | None = None,
    ) -> None:
        values: dict[str, Any] = {"id": claim.endpoint.id, "worker_id": worker_id, "now": now}
        if outcome is not None:
            failed = outcome.failed
            values |= {
                "new_seen_slot_at": outcome.seen_slot_at,
                "new_seen_failing": outcome.seen_failing,
                "new_next_analysis_at": outcome.next_analysis_at,
                "new_llm_failures": claim.llm_failures + 1 if failed else 0,
                "new_retry_at": outcome.next_analysis_at if failed else None,
            }
        if rules is not None:
            streak = rules.streak
            values |= {
                "new_rules_seen_slot_at": rules.seen_slot_at,
                "new_rule_held": rules.held,
                "new_rule_holding": None if streak is None else streak.number,
                "new_rule_holding_since": None if streak is None else streak.since,
            }
        kept = None if rules is None else rules.session
        sessions = [each for each in (kept, session) if each is not None]
        shape = (outcome is not None, rules is not None)
        if self._db.dialect == "postgresql" and len(sessions) == 1:
            stored = {f"session_{key}": value for key, value in session_values(sessions[0]).items()}
            written = await self._db.write_one(_finish_postgres_statement(*shape), values | stored)
        else:
            async with self._db.write() as conn:
                written = (await conn.execute(_finish_statement(*shape), values)).rowcount
                if written == 1 and sessions:
                    await conn.execute(
                        insert(analysis_sessions), [session_values(s) for s in sessions]
                    )
        if written != 1:
            raise LeaseLost(claim.endpoint.id, worker_id)

    async def last_analysed(self, endpoint_id: str) -> datetime | None:
        query = select(planner_state.c.last_analysed_at).where(
            planner_state.c.endpoint_id == endpoint_id
        )
        async with self._db.read() as conn:
            found: datetime | None = (await conn.execute(query)).scalar_one_or_none()
        return found

    async def add_proposal(
        self, proposal: Proposal, notifications: Sequence[Notification] = ()
    ) -> None:
        if not notifications:
            await self._db.write_one(insert(proposals).values(proposal_values(proposal)))
            return
        # Here only: the notifications' SQL imports the alerts, their targets' cipher and the
        # retention rules, which reading proposals (`proposals list`) has no use for (~0.01 s).
        from cronpilot.adapters.sql.notifications_repo import add_notifications

        async with self._db.write() as conn:
            await conn.execute(insert(proposals).values(proposal_values(proposal)))
            await add_notifications(conn, notifications, self._cipher)

    async def get_proposal(self, proposal_id: str) -> Proposal:
        row = await read_by_id(self._db, proposals, "proposal", proposal_id, ProposalNotFound)
        return proposal_from_row(row)

    async def list_proposals(
        self,
        status: ProposalStatus | None = None,
        job_name: str | None = None,
        endpoint_id: str | None = None,
        limit: int = 100,
        after: Cursor | None = None,
        *,
        within: TimeRange | None = None,
        job_ids: Collection[str] | None = None,
    ) -> list[Proposal]:
        query = (
            select(proposals)
            .join(jobs, jobs.c.id == proposals.c.job_id)
            .where(*in_window(proposals.c.created_at, within))
            .order_by(proposals.c.created_at.desc(), proposals.c.id)
            .limit(limit)
        )
        if status is not None:
            query = query.where(proposals.c.status == status.value)
        if job_name is not None:
            query = query.where(jobs.c.name == job_name)
        if endpoint_id is not None:
            query = query.where(proposals.c.endpoint_id == endpoint_id)
        if job_ids is not None:
            query = query.where(proposals.c.job_id.in_(sorted(job_ids)))
        if after is not None:
            query = query.where(
                after_cursor(proposals.c.created_at, proposals.c.id, after, ids_ascending=True)
            )
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

    async def count_applied(self, endpoint_id: str, since: datetime) -> int:
        async with self._db.read() as conn:
            result = await conn.execute(_applied_statement(), {"id": endpoint_id, "since": since})
            return int(result.scalar_one())

    async def expire_pending(self, now: datetime) -> int:
        # Mirrors `domain.planning.planning.lapsed` and `expired` in one UPDATE (proven by
        # `tests/contract/test_rules_contract.py::test_housekeeping_expires_what_has_lapsed`).
        return await self._db.write_one(
            update(proposals)
            .where(
                proposals.c.status == ProposalStatus.PENDING.value,
                proposals.c.expires_at <= now,
            )
            .values(
                status=ProposalStatus.EXPIRED.value,
                decided_by=EXPIRED_BY,
                decided_at=now,
                outcome=EXPIRED_OUTCOME,
            )
        )

    async def supersede(self, newer: Proposal) -> int:
        # Mirrors `domain.planning.planning.superseded` in one UPDATE (proven by the contract
        # suite).
        return await self._db.write_one(
            update(proposals)
            .where(
                proposals.c.endpoint_id == newer.endpoint_id,
                proposals.c.status == ProposalStatus.PENDING.value,
                proposals.c.id != newer.id,
            )
            .values(
                status=ProposalStatus.SUPERSEDED.value,
                decided_by=newer.proposed_by,
                decided_at=newer.created_at,
                outcome=superseding_outcome(newer),
                superseded_by=newer.id,
            )
        )

    async def autonomy_history(self, job_id: str) -> list[AutonomyStep]:
        query = (
            select(autonomy_steps)
            .where(autonomy_steps.c.job_id == job_id)
            .order_by(autonomy_steps.c.id)
        )
        async with self._db.read() as conn:
            return [step_from_row(row) for row in (await conn.execute(query)).mappings()]

    async def add_autonomy_step(self, step: AutonomyStep) -> None:
        await self._db.write_one(insert(autonomy_steps).values(step_values(step)))

    async def get_session(self, session_id: str) -> AnalysisSession:
        row = await read_by_id(self._db, analysis_sessions, "session", session_id, SessionNotFound)
        return session_from_row(row)

    async def list_sessions(
        self,
        endpoint_id: str | None = None,
        limit: int = 50,
        after: Cursor | None = None,
        *,
        within: TimeRange | None = None,
        job_ids: Collection[str] | None = None,
    ) -> list[AnalysisSession]:
        query = (
            select(analysis_sessions)
            .where(*in_window(analysis_sessions.c.started_at, within))
            .order_by(analysis_sessions.c.started_at.desc(), analysis_sessions.c.id)
            .limit(limit)
        )
        if endpoint_id is not None:
            query = query.where(analysis_sessions.c.endpoint_id == endpoint_id)
        if job_ids is not None:
            of_jobs = select(endpoints.c.id).where(endpoints.c.job_id.in_(sorted(job_ids)))
            query = query.where(analysis_sessions.c.endpoint_id.in_(of_jobs))
        if after is not None:
            table = analysis_sessions.c
            query = query.where(after_cursor(table.started_at, table.id, after, ids_ascending=True))
        async with self._db.read() as conn:
            return [session_from_row(row) for row in (await conn.execute(query)).mappings()]

    async def prune_sessions(
        self, sessions_before: datetime, rules_before: datetime, limit: int
    ) -> int:
        # Mirrors `domain.runs.retention.session_expired`; the outer bound lets the index on
        # `started_at` narrow the scan to rows older than the longer window.
        table = analysis_sessions.c
        rules = table.planner == RULES_PLANNER
        where = and_(
            table.started_at < max(sessions_before, rules_before),
            or_(
                and_(rules, table.started_at < rules_before),
                and_(~rules, table.started_at < sessions_before),
            ),
        )
        oldest = (table.started_at, table.id)
        return await delete_oldest(self._db, analysis_sessions, where, oldest, limit)

    async def prune_proposals(self, before: datetime, limit: int) -> int:
        # Mirrors `domain.runs.retention.proposal_expired`: statuses named, so that the index on
        # (status, created_at) serves each.
        decided = [s.value for s in ProposalStatus if s is not ProposalStatus.PENDING]
        table = proposals.c
        where = and_(table.status.in_(decided), table.created_at < before)
        oldest = (table.created_at, table.id)
        return await delete_oldest(self._db, proposals, where, oldest, limit)
