"""The planner's ports: its side of the store (analyses, sessions, proposals) and the LLM."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from cronpilot.domain.alerts.alerts import Notification
    from cronpilot.domain.model import JSON
    from cronpilot.domain.paging import Cursor
    from cronpilot.domain.planning.autonomy import AutonomyStep
    from cronpilot.domain.planning.planning import (
        AnalysisClaim,
        AnalysisOutcome,
        AnalysisSession,
        ChatReply,
        Proposal,
        ProposalStatus,
        RulesPass,
    )
    from cronpilot.domain.schedule.time_range import TimeRange


class PlannerRepository(Protocol):
    """The planner's side of the store: which endpoints to analyse, sessions and proposals."""

    async def claim_analyses(
        self, now: datetime, worker_id: str, lease_seconds: float, limit: int
    ) -> list[AnalysisClaim]:
        """Atomically lease up to `limit` endpoints that need analysis (`needs_analysis`) or
        their rules evaluated (`needs_rules`), earliest next analysis first; each claim says
        which (`AnalysisClaim.analysis_due`). Concurrent callers never get the same endpoint (SKIP
        LOCKED on PostgreSQL); a lease that has expired may be claimed again."""
        ...

    async def claim_endpoint(
        self, ref: str, now: datetime, worker_id: str, lease_seconds: float
    ) -> AnalysisClaim:
        """Lease one endpoint (by id or by `job/endpoint`) for analysis now, whether or not it
        needs it (`run-once`).

        Raises `EndpointNotFound`, or `AnalysisBusy` while another worker's lease is live."""
        ...

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
        """In one transaction: store the sessions of the pass and update the endpoint's
        planner state (its last look at `now` too), and free the lease. The analyst's
        `session` and `outcome` (what it has seen, when to look again, the failure backoff)
        are None when it was not due, the session alone when the pass was quiet; `rules` (the
        rules session, None when quiet, what the rules have seen and the rule that stands) is
        None when the endpoint has no rules. Raises `LeaseLost` (and writes nothing) when the
        lease is no longer ours."""
        ...

    async def last_analysed(self, endpoint_id: str) -> datetime | None:
        """When a planner pass over the endpoint last finished, stored or quiet ("last looked
        at"); None when none has, or for an unknown endpoint."""
        ...

    async def add_proposal(
        self, proposal: Proposal, notifications: Sequence[Notification] = ()
    ) -> None:
        """Store `proposal` and, in the same transaction, the `notifications` it raises
        (`domain.alerts.alerts.proposal_notifications`): both or neither."""
        ...

    async def get_proposal(self, proposal_id: str) -> Proposal:
        """Raises `ProposalNotFound`."""
        ...

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
        """Newest first (ids ascending within one time), optionally filtered (`within`: made
        in that window; `job_ids`: of those jobs only); with `after`, those that follow it
        (`domain.paging.follows`, ids ascending)."""
        ...

    async def decide(
        self,
        proposal_id: str,
        status: ProposalStatus,
        decided_by: str,
        outcome: str,
        now: datetime,
    ) -> Proposal:
        """Move a pending proposal to `status`, recording who decided, when and the outcome.

        Raises `ProposalNotFound`, or `ProposalNotPending` when someone decided it first."""
        ...

    async def count_applied(self, endpoint_id: str, since: datetime) -> int:
        """How many of the endpoint's proposals were applied at or after `since` (the rate the
        guardrails weigh); 0 for an unknown endpoint."""
        ...

    async def expire_pending(self, now: datetime) -> int:
        """Mark pending proposals whose `expires_at` has passed `expired`; returns how many."""
        ...

    async def supersede(self, newer: Proposal) -> int:
        """Mark the pending proposals of `newer`'s endpoint, other than `newer`, superseded by
        it (`domain.planning.planning.superseded`); returns how many."""
        ...

    async def get_session(self, session_id: str) -> AnalysisSession:
        """With its tool calls in order. Raises `SessionNotFound`."""
        ...

    async def autonomy_history(self, job_id: str) -> list[AutonomyStep]:
        """The job's graded-autonomy steps, oldest first; the last one holds its threshold
        (`domain.planning.autonomy`). Empty for a job without decisions, or an unknown one."""
        ...

    async def add_autonomy_step(self, step: AutonomyStep) -> None:
        """Append `step` to its job's history."""
        ...

    async def list_sessions(
        self,
        endpoint_id: str | None = None,
        limit: int = 50,
        after: Cursor | None = None,
        *,
        within: TimeRange | None = None,
        job_ids: Collection[str] | None = None,
    ) -> list[AnalysisSession]:
        """Newest first (ids ascending within one time), with their tool calls, optionally
        those started `within` a window, of endpoints of `job_ids` only; with `after`, those
        that follow it (`domain.paging.follows`, ids ascending)."""
        ...

    async def prune_sessions(
        self, sessions_before: datetime, rules_before: datetime, limit: int
    ) -> int:
        """Delete up to `limit` sessions (with their tool calls and rule evaluations) that
        `domain.runs.retention.session_expired` says have had their time, oldest first, in one
        transaction; returns how many."""
        ...

    async def prune_proposals(self, before: datetime, limit: int) -> int:
        """Delete up to `limit` decided proposals made before `before`
        (`domain.runs.retention.proposal_expired`: never a pending one), oldest first, in one
        transaction; returns how many."""
        ...


class ChatModel(Protocol):
    """An LLM speaking the chat-completions protocol with tools."""

    @property
    def name(self) -> str:
        """Who proposes, in audits: `llm:<model>`."""
        ...

    async def complete(
        self,
        messages: Sequence[JSON],
        tools: Sequence[JSON],
        force_tool: str | None = None,
        *,
        seconds: float | None = None,
    ) -> ChatReply:
        """One completion; with `force_tool` the model must call that tool. Retries transient
        failures itself; raises `LlmUnavailable` when it gives up. Given `seconds`, it gives up
        once they are spent: no request runs, and no retry waits, past them."""
        ...

    async def close(self) -> None: ...
