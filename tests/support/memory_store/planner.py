"""`MemoryPlanner`: the planner repository over plain dicts beside a `MemoryState`, deciding
what needs analysis with `domain.planning.planning.needs_analysis`, as the SQL store does in SQL."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from cronpilot.domain.alerts.alerts import Notification
from cronpilot.domain.errors import (
    AnalysisBusy,
    LeaseLost,
    ProposalNotFound,
    ProposalNotPending,
    SessionNotFound,
)
from cronpilot.domain.ids import by_id_or_prefix
from cronpilot.domain.model import Endpoint, PlannerMode
from cronpilot.domain.paging import Cursor, follows
from cronpilot.domain.planning.autonomy import AutonomyStep
from cronpilot.domain.planning.planning import (
    AnalysisClaim,
    AnalysisOutcome,
    AnalysisSession,
    PlannerState,
    Proposal,
    ProposalStatus,
    RulesPass,
    analysis_busy,
    analysis_order,
    effective_mode,
    expired,
    lapsed,
    needs_analysis,
    needs_rules,
    superseded,
)
from cronpilot.domain.ports import PlannerRepository
from cronpilot.domain.runs.retention import proposal_expired, session_expired
from cronpilot.domain.schedule.time_range import TimeRange, falls_in

if TYPE_CHECKING:
    # The store imports this module to build its planner; the state is only a type here.
    from tests.support.memory_store.store import MemoryState


@dataclass
class MemoryPlannerState:
    states: dict[str, PlannerState] = field(default_factory=dict)
    """By endpoint id."""
    proposals: dict[str, Proposal] = field(default_factory=dict)
    sessions: dict[str, AnalysisSession] = field(default_factory=dict)
    autonomy: dict[str, list[AutonomyStep]] = field(default_factory=dict)
    """By job id, oldest first."""


def _newest_first(items: list[Proposal]) -> list[Proposal]:
    return sorted(sorted(items, key=lambda p: p.id), key=lambda p: p.created_at, reverse=True)


class MemoryPlanner(PlannerRepository):
    def __init__(self, state: MemoryState, planning: MemoryPlannerState) -> None:
        self._state = state
        self.planning = planning

    def _planner_state(self, endpoint_id: str) -> PlannerState:
        return self.planning.states.get(endpoint_id) or PlannerState(endpoint_id)

    def _mode(self, endpoint: Endpoint) -> PlannerMode:
        job = self._state.jobs[endpoint.job_name]
        return effective_mode(endpoint.spec.planner_mode, job.planner_mode)

    def _claim(
        self, endpoint: Endpoint, until: datetime, worker_id: str, analysis_due: bool = True
    ) -> AnalysisClaim:
        state = self._planner_state(endpoint.id)
        self.planning.states[endpoint.id] = replace(state, lease_owner=worker_id, lease_until=until)
        return AnalysisClaim(
            endpoint,
            self._mode(endpoint),
            until,
            state.llm_failures,
            analysis_due=analysis_due,
            rule_held=state.rule_held,
            rule_streak=state.rule_streak,
        )

    def _due(self, endpoint: Endpoint, now: datetime) -> tuple[bool, bool]:
        """Whether the analyst is due (`needs_analysis`), and whether the rules are
        (`needs_rules`)."""
        state, mode = self._planner_state(endpoint.id), self._mode(endpoint)
        newest = self._state.newest_finished_slot(endpoint.job_id)
        return (
            needs_analysis(state, endpoint, mode, newest, now),
            needs_rules(state, endpoint, mode, newest, now),
        )

    async def claim_analyses(
        self, now: datetime, worker_id: str, lease_seconds: float, limit: int
    ) -> list[AnalysisClaim]:
        until = now + timedelta(seconds=lease_seconds)
        async with self._state.lock:
            due = {e.id: self._due(e, now) for e in self._state.endpoints.values()}
            chosen = [e for e in self._state.endpoints.values() if any(due[e.id])]
            chosen.sort(key=lambda e: analysis_order(self._planner_state(e.id)))
            return [self._claim(e, until, worker_id, due[e.id][0]) for e in chosen[: max(limit, 0)]]

    async def claim_endpoint(
        self, ref: str, now: datetime, worker_id: str, lease_seconds: float
    ) -> AnalysisClaim:
        async with self._state.lock:
            endpoint = self._state.endpoint_by_ref(ref)
            state = self._planner_state(endpoint.id)
            if analysis_busy(state, worker_id, now):
                assert state.lease_owner is not None
                raise AnalysisBusy(endpoint.ref, state.lease_owner)
            return self._claim(endpoint, now + timedelta(seconds=lease_seconds), worker_id)

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
        async with self._state.lock:
            state = self.planning.states.get(claim.endpoint.id)
            if state is None or state.lease_owner != worker_id:
                raise LeaseLost(claim.endpoint.id, worker_id)
            state = replace(state, lease_owner=None, lease_until=None, last_analysed_at=now)
            if outcome is not None:
                failed = outcome.failed
                state = replace(
                    state,
                    seen_slot_at=outcome.seen_slot_at,
                    seen_failing=outcome.seen_failing,
                    next_analysis_at=outcome.next_analysis_at,
                    llm_failures=claim.llm_failures + 1 if failed else 0,
                    retry_at=outcome.next_analysis_at if failed else None,
                )
            if rules is not None:
                state = replace(
                    state,
                    rules_seen_slot_at=rules.seen_slot_at,
                    rule_held=rules.held,
                    rule_streak=rules.streak,
                )
                if rules.session is not None:
                    self.planning.sessions[rules.session.id] = rules.session
            self.planning.states[claim.endpoint.id] = state
            if session is not None:
                self.planning.sessions[session.id] = session

    async def last_analysed(self, endpoint_id: str) -> datetime | None:
        state = self.planning.states.get(endpoint_id)
        return None if state is None else state.last_analysed_at

    async def add_proposal(
        self, proposal: Proposal, notifications: Sequence[Notification] = ()
    ) -> None:
        async with self._state.lock:
            self._state.endpoint(proposal.endpoint_id)
            self.planning.proposals[proposal.id] = proposal
            self._state.add_notifications(notifications)

    async def get_proposal(self, proposal_id: str) -> Proposal:
        found = by_id_or_prefix("proposal", proposal_id, self.planning.proposals)
        if found is None:
            raise ProposalNotFound(proposal_id)
        return found

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
        job_id = None if job_name is None else self._state.jobs.get(job_name)
        chosen = [
            p
            for p in self.planning.proposals.values()
            if (status is None or p.status is status)
            and (job_name is None or (job_id is not None and p.job_id == job_id.id))
            and (endpoint_id is None or p.endpoint_id == endpoint_id)
            and (job_ids is None or p.job_id in job_ids)
            and falls_in(within, p.created_at)
            and follows(p.created_at, p.id, after, ids_ascending=True)
        ]
        return _newest_first(chosen)[:limit]

    async def decide(
        self,
        proposal_id: str,
        status: ProposalStatus,
        decided_by: str,
        outcome: str,
        now: datetime,
    ) -> Proposal:
        async with self._state.lock:
            proposal = await self.get_proposal(proposal_id)
            if proposal.status is not ProposalStatus.PENDING:
                raise ProposalNotPending(proposal_id, proposal.status)
            decided = replace(
                proposal, status=status, decided_by=decided_by, decided_at=now, outcome=outcome
            )
            self.planning.proposals[proposal_id] = decided
        return decided

    async def count_applied(self, endpoint_id: str, since: datetime) -> int:
        return sum(
            p.endpoint_id == endpoint_id
            and p.status is ProposalStatus.APPLIED
            and p.decided_at is not None
            and p.decided_at >= since
            for p in self.planning.proposals.values()
        )

    async def expire_pending(self, now: datetime) -> int:
        async with self._state.lock:
            ended = [expired(p, now) for p in self.planning.proposals.values() if lapsed(p, now)]
            self.planning.proposals.update((p.id, p) for p in ended)
        return len(ended)

    async def supersede(self, newer: Proposal) -> int:
        async with self._state.lock:
            older = [
                superseded(p, newer)
                for p in self.planning.proposals.values()
                if p.endpoint_id == newer.endpoint_id
                and p.status is ProposalStatus.PENDING
                and p.id != newer.id
            ]
            self.planning.proposals.update((p.id, p) for p in older)
        return len(older)

    async def autonomy_history(self, job_id: str) -> list[AutonomyStep]:
        return list(self.planning.autonomy.get(job_id, ()))

    async def add_autonomy_step(self, step: AutonomyStep) -> None:
        async with self._state.lock:
            self.planning.autonomy.setdefault(step.job_id, []).append(step)

    async def get_session(self, session_id: str) -> AnalysisSession:
        found = by_id_or_prefix("session", session_id, self.planning.sessions)
        if found is None:
            raise SessionNotFound(session_id)
        return found

    async def list_sessions(
        self,
        endpoint_id: str | None = None,
        limit: int = 50,
        after: Cursor | None = None,
        *,
        within: TimeRange | None = None,
        job_ids: Collection[str] | None = None,
    ) -> list[AnalysisSession]:
        of_jobs = (
            None
            if job_ids is None
            else {e.id for e in self._state.endpoints.values() if e.job_id in job_ids}
        )
        chosen = [
            s
            for s in self.planning.sessions.values()
            if (endpoint_id is None or s.endpoint_id == endpoint_id)
            and (of_jobs is None or s.endpoint_id in of_jobs)
            and falls_in(within, s.started_at)
            and follows(s.started_at, s.id, after, ids_ascending=True)
        ]
        chosen.sort(key=lambda s: s.id)
        chosen.sort(key=lambda s: s.started_at, reverse=True)
        return chosen[:limit]

    async def prune_sessions(
        self, sessions_before: datetime, rules_before: datetime, limit: int
    ) -> int:
        async with self._state.lock:
            doomed = sorted(
                (
                    s
                    for s in self.planning.sessions.values()
                    if session_expired(s, sessions_before, rules_before)
                ),
                key=lambda s: (s.started_at, s.id),
            )[: max(limit, 0)]
            for session in doomed:
                del self.planning.sessions[session.id]
        return len(doomed)

    async def prune_proposals(self, before: datetime, limit: int) -> int:
        async with self._state.lock:
            doomed = sorted(
                (p for p in self.planning.proposals.values() if proposal_expired(p, before)),
                key=lambda p: (p.created_at, p.id),
            )[: max(limit, 0)]
            for proposal in doomed:
                del self.planning.proposals[proposal.id]
        return len(doomed)
