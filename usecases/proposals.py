"""The proposal desk: every planner action and every admin decision goes through here, so that
guardrails, auditing and applying a hint happen the same way whoever asks. Each of `propose`,
`approve` and `reject` is one unit of work: the guardrails' reads, the change to the endpoint
and the proposal's record are written together or not at all."""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from cronpilot.domain.access.access import planner_actor
from cronpilot.domain.access.audit import AuditAction, audit_entry
from cronpilot.domain.alerts.alerts import proposal_notifications
from cronpilot.domain.errors import ProposalNotPending
from cronpilot.domain.log_extra import log_extra
from cronpilot.domain.model import Endpoint, PlannerMode, ScheduleSource, new_id
from cronpilot.domain.planning.autonomy import Gate, Gated, Suggested, gate, learnt, threshold_of
from cronpilot.domain.planning.churn import unneeded
from cronpilot.domain.planning.controllers import Controller, Held, held
from cronpilot.domain.planning.guardrails import (
    RATE_WINDOW,
    GuardrailLimits,
    GuardrailRule,
    Refusal,
    change_for,
    changed_by,
    refusal,
)
from cronpilot.domain.planning.planning import SUPERSEDING, Proposal, ProposalDraft, ProposalStatus
from cronpilot.domain.planning.rejections import StandingRejection, standing_rejection
from cronpilot.domain.ports import (
    ReadingFactory,
    Repositories,
    Telemetry,
    UnitOfWorkFactory,
    Waker,
)
from cronpilot.domain.rules.rule_firing import URGENT_RULES, FiringRule, rule_made
from cronpilot.domain.runs.telemetry import NO_TELEMETRY

log = logging.getLogger(__name__)

GRADED = "graded"
"""Who decided a proposal that graded autonomy applied or dropped."""
RECENT = 20
"""The endpoint's latest proposals the cool-down reads (`domain.planning.churn.cooling`), and its
latest rejections a proposal is held back by (`domain.planning.rejections`)."""


@dataclass(frozen=True, slots=True)
class Proposer:
    """Who proposes, from which session, in which mode; `firing` is the endpoint's response
    rule that holds, which this proposer's proposals may not contradict."""

    name: str
    mode: PlannerMode
    session_id: str | None = None
    firing: FiringRule | None = None
    confidence: float | None = None
    """The confidence of the analysis that proposes, which decides in `graded` mode; None for
    a deterministic proposer (a response rule)."""
    suggested: Suggested | None = None
    """The built-in planner's suggestion for the endpoint, which `graded` mode weighs an
    interval proposal against (`domain.planning.autonomy.weighed`)."""


class ProposalDesk:
    def __init__(
        self,
        uow: UnitOfWorkFactory,
        reading: ReadingFactory,
        waker: Waker | None,
        limits: GuardrailLimits,
        *,
        telemetry: Telemetry = NO_TELEMETRY,
    ) -> None:
        self._uow = uow
        self._reading = reading
        """For the questions a planner asks before it acts (`unneeded`, `rejection`): on SQLite a
        unit of work would take the write lock only to read."""
        self._waker = waker
        self._limits = limits
        self._telemetry = telemetry

    @property
    def dwell_seconds(self) -> float:
        """How long a change stands before another controller's may follow it."""
        return self._limits.dwell_seconds

    @property
    def max_hint_ttl_seconds(self) -> float:
        """The longest hint the guardrails take: a planner's step asks for no more."""
        return self._limits.max_hint_ttl_seconds

    @property
    def max_changes_per_hour(self) -> int:
        """The changes the guardrails allow an endpoint within an hour (`RATE_WINDOW`)."""
        return self._limits.max_changes_per_hour

    async def _guarded(
        self,
        tx: Repositories,
        draft: ProposalDraft,
        endpoint_id: str,
        now: datetime,
        firing: FiringRule | None = None,
        *,
        proposed_by: str,
        approving: bool = False,
    ) -> tuple[Endpoint, Refusal | None]:
        """The endpoint as it is now, and why the guardrails refuse `draft` on it (None: they
        do not). The endpoint is locked first: two decisions on one endpoint at once (two
        approvals, an approval and an auto proposal) count the changes one after the other, so
        they cannot both pass `max_changes_per_hour`. An admin `approving` is never held
        (decision 0048)."""
        endpoint = await tx.catalog.get_endpoint(endpoint_id, for_update=True)
        changes = await tx.planner.count_applied(endpoint_id, now - RATE_WINDOW)
        recent = await tx.planner.list_proposals(endpoint_id=endpoint_id, limit=RECENT)
        why_not = refusal(
            draft,
            endpoint,
            changes,
            now,
            self._limits,
            firing=firing,
            recent=recent,
            ruled=rule_made(proposed_by),
            urgent=proposed_by == URGENT_RULES,
            by=_controller(proposed_by, approving=approving),
        )
        return endpoint, why_not

    async def _standing(
        self, tx: Repositories, draft: ProposalDraft, endpoint: Endpoint, now: datetime
    ) -> StandingRejection | None:
        """The admin's rejection that holds `draft` back on the endpoint, for the job's
        cool-down or the configured one (`domain.planning.rejections`), or None."""
        job = await tx.catalog.get_job(endpoint.job_name)
        seconds = job.rejection_cooldown_seconds
        if seconds is None:
            seconds = self._limits.rejection_cooldown_seconds
        rejected = await tx.planner.list_proposals(
            ProposalStatus.REJECTED, endpoint_id=endpoint.id, limit=RECENT
        )
        return standing_rejection(draft, rejected, now, timedelta(seconds=seconds))

    async def rejection(
        self, draft: ProposalDraft, endpoint_id: str, now: datetime
    ) -> StandingRejection | None:
        """The admin's rejection that holds `draft` back on the endpoint now, or None. A rule
        asks before it proposes, so that a rejected change waits quietly for its cool-down
        instead of being refused again once per dwell."""
        async with self._reading() as tx:
            endpoint = await tx.catalog.get_endpoint(endpoint_id)
            return await self._standing(tx, draft, endpoint, now)

    async def unneeded(
        self, draft: ProposalDraft, endpoint_id: str, now: datetime
    ) -> str | Held | None:
        """Why the planner's `draft` is not worth making on the endpoint
        (`domain.planning.churn.unneeded`: in force, or the same proposal pending; an admin rejected
        it within the cool-down; or a higher controller holds the endpoint, or its last change
        dwells: then it is counted and answered as `Held`), or None."""
        async with self._reading() as tx:
            endpoint = await tx.catalog.get_endpoint(endpoint_id)
            pending = await tx.planner.list_proposals(
                ProposalStatus.PENDING, endpoint_id=endpoint_id
            )
            recent = await tx.planner.list_proposals(endpoint_id=endpoint_id, limit=RECENT)
            standing = await self._standing(tx, draft, endpoint, now)
        if standing is not None:
            return standing.text()
        in_force = unneeded(draft, endpoint, pending, now)
        if in_force is not None:
            return in_force
        waits = held(Controller.PLANNER, endpoint, recent, now, self._limits.dwell_seconds)
        if waits is None:
            return None
        self._telemetry.held_back(endpoint, waits.by)
        return waits

    async def propose(
        self, draft: ProposalDraft, endpoint_id: str, proposer: Proposer, now: datetime
    ) -> Proposal:
        """Record `draft` as a proposal: refused by a guardrail, held for review, or applied at
        once (`auto`); in `graded` mode the proposer's confidence and the job's threshold
        decide (`domain.planning.autonomy.gate`), and a dropped proposal is recorded too. The same
        change rejected by an admin within the cool-down is refused, whoever proposes it. One
        held or applied supersedes the endpoint's older pending proposals."""
        earlier = False
        async with self._uow() as tx:
            endpoint, why_not = await self._guarded(
                tx, draft, endpoint_id, now, proposer.firing, proposed_by=proposer.name
            )
            if why_not is None:
                standing = await self._standing(tx, draft, endpoint, now)
                if standing is not None:
                    why_not = Refusal(GuardrailRule.REJECTED, standing.text())
            proposal = Proposal(
                id=new_id(),
                endpoint_id=endpoint.id,
                job_id=endpoint.job_id,
                kind=draft.kind,
                reason=draft.reason,
                proposed_by=proposer.name,
                created_at=now,
                status=ProposalStatus.PENDING,
                session_id=proposer.session_id,
                interval_seconds=draft.interval_seconds,
                at=draft.at,
                ttl_seconds=draft.ttl_seconds,
                expires_at=now + timedelta(seconds=self._limits.pending_ttl_seconds),
            )
            gated = await _gated(tx, draft, endpoint, proposer)
            if gated is not None:
                proposal = replace(proposal, confidence=proposer.confidence, outcome=gated.why)
            if why_not is not None:
                proposal = _decided(
                    proposal, ProposalStatus.REFUSED, "guardrails", why_not.text, now
                )
            elif gated is not None and gated.gate is Gate.DROP:
                proposal = _decided(proposal, ProposalStatus.DROPPED, GRADED, gated.why, now)
            elif proposer.mode is PlannerMode.AUTO or (gated and gated.gate is Gate.APPLY):
                outcome, earlier = await _apply(tx, draft, endpoint, proposer.name, now)
                by = "auto" if gated is None else GRADED
                proposal = _decided(proposal, ProposalStatus.APPLIED, by, outcome, now)
            superseded = 0
            if proposal.status in SUPERSEDING:
                superseded = await tx.planner.supersede(proposal)
            # Held for review: the admins' webhooks hear of it with the proposal, atomically.
            await tx.planner.add_proposal(proposal, proposal_notifications(endpoint, proposal, now))
            await tx.commit()
        if earlier:
            await self._wake()
        self._telemetry.proposed(proposal.status, why_not.rule if why_not else None)
        if superseded:
            self._telemetry.proposed(ProposalStatus.SUPERSEDED, count=superseded)
        log.info(
            "%s proposal for %s: %s (%s)",
            proposal.kind,
            endpoint.ref,
            proposal.status,
            proposal.outcome or proposal.reason,
            extra=log_extra(
                "propose",
                endpoint_id=endpoint.id,
                proposal_id=proposal.id,
                status=str(proposal.status),
            ),
        )
        return proposal

    async def approve(self, proposal_id: str, actor: str, now: datetime) -> Proposal:
        """Apply a pending proposal for `actor` (its decider, and in the audit log, however the
        guardrails decide); the guardrails are checked again against the endpoint as it is
        now. A lapsed proposal is marked expired and `ProposalNotPending` raised."""
        async with self._uow() as tx:
            proposal = await _pending(tx, proposal_id)
            if proposal.expires_at is not None and proposal.expires_at <= now:
                await tx.planner.expire_pending(now)
                await tx.commit()
                raise ProposalNotPending(proposal.id, ProposalStatus.EXPIRED)
            endpoint, why_not = await self._guarded(
                tx,
                proposal.draft,
                proposal.endpoint_id,
                now,
                proposed_by=proposal.proposed_by,
                approving=True,
            )
            if why_not is not None:
                refused = await tx.planner.decide(
                    proposal.id,
                    ProposalStatus.REFUSED,
                    actor,
                    f"refused by guardrails: {why_not.text}",
                    now,
                )
                await _audit(tx, actor, refused, now)
                await _learn(tx, refused, approved=True, now=now)
                await tx.commit()
                self._telemetry.proposed(ProposalStatus.REFUSED, why_not.rule)
                return refused
            outcome, earlier = await _apply(tx, proposal.draft, endpoint, proposal.proposed_by, now)
            # Of two admins approving at once, only one decision is recorded: the other gets
            # `ProposalNotPending`, and its change is rolled back with its unit of work.
            decided = await tx.planner.decide(
                proposal.id, ProposalStatus.APPLIED, actor, outcome, now
            )
            await _audit(tx, actor, decided, now)
            await _learn(tx, decided, approved=True, now=now)
            await tx.commit()
        if earlier:
            await self._wake()
        self._telemetry.proposed(ProposalStatus.APPLIED)
        log.info(
            "proposal %s approved by %s",
            proposal.id,
            actor,
            extra=log_extra("approve", proposal_id=proposal.id, endpoint_id=endpoint.id),
        )
        return decided

    async def reject(self, proposal_id: str, actor: str, reason: str, now: datetime) -> Proposal:
        """Turn a pending proposal down for `actor`, its decider; audited with the reason."""
        async with self._uow() as tx:
            # Looked up first: `proposal_id` may be a prefix of the id (`domain.ids`).
            proposal = await _pending(tx, proposal_id)
            decided = await tx.planner.decide(
                proposal.id, ProposalStatus.REJECTED, actor, reason, now
            )
            await _audit(tx, actor, decided, now)
            await _learn(tx, decided, approved=False, now=now)
            await tx.commit()
        self._telemetry.proposed(ProposalStatus.REJECTED)
        # Logged once decided: `decide` raises `ProposalNotPending` for a proposal decided
        # already.
        log.info(
            "proposal %s rejected by %s",
            decided.id,
            actor,
            extra=log_extra("reject", proposal_id=decided.id),
        )
        return decided

    async def _wake(self) -> None:
        if self._waker is not None:
            await self._waker.notify()


def _controller(proposed_by: str, *, approving: bool) -> Controller:
    if approving:
        return Controller.ADMIN
    return Controller.RULE if rule_made(proposed_by) else Controller.PLANNER


async def _pending(tx: Repositories, proposal_id: str) -> Proposal:
    """The proposal (an id or a unique prefix), if it waits for a decision. Raises
    `ProposalNotFound`, or `ProposalNotPending` (naming the proposal that superseded it)."""
    proposal = await tx.planner.get_proposal(proposal_id)
    if proposal.status is not ProposalStatus.PENDING:
        raise ProposalNotPending(proposal.id, proposal.status, proposal.superseded_by)
    return proposal


async def _apply(
    tx: Repositories, draft: ProposalDraft, endpoint: Endpoint, proposed_by: str, now: datetime
) -> tuple[str, bool]:
    """Write the change to `endpoint` (read for update), as the domain decides it
    (`guardrails.changed_by`), in one write; a pause as by its proposer
    (`domain.access.access.planner_actor`: the change is the planner's, whoever approved it).
    Returns what happened, in words (`already in force` when the endpoint had that pause and
    those hints already), and whether the endpoint is now due earlier than before (sleeping
    schedulers are to be woken once the unit is committed)."""
    change = change_for(draft, endpoint, now, by=planner_actor(proposed_by))
    updated = changed_by(endpoint, change, now)
    if updated is not endpoint:
        await tx.catalog.save_schedule(updated)
    before, after = endpoint.next_run_at, updated.next_run_at
    earlier = after is not None and (before is None or after < before)
    source = updated.next_run_source
    if after is not None:
        when = f"next run {after.isoformat()}"
    elif source is ScheduleSource.DAG:
        when = "runs when its upstreams succeed"
    elif updated.pause is not None and updated.pause.until is not None:
        when = f"paused until {updated.pause.until.isoformat()}"
    else:
        when = "next run never (paused)"
    done = "applied" if updated is not endpoint else "already in force"
    return f"{done}: {when} ({source.value})", earlier


async def _gated(
    tx: Repositories, draft: ProposalDraft, endpoint: Endpoint, proposer: Proposer
) -> Gated | None:
    """What graded autonomy makes of `draft`; None outside `graded` mode, where the mode
    alone decides (`auto` applies, `review` holds)."""
    if proposer.mode is not PlannerMode.GRADED:
        return None
    history = await tx.planner.autonomy_history(endpoint.job_id)
    threshold = threshold_of(history[-1] if history else None)
    return gate(draft, endpoint, proposer.confidence, threshold, proposer.suggested)


async def _learn(tx: Repositories, decided: Proposal, *, approved: bool, now: datetime) -> None:
    """An admin's decision on a proposal a graded analysis made, as a step of its job's
    threshold (`domain.planning.autonomy.learnt`); other decisions teach nothing."""
    if decided.confidence is None:
        return
    history = await tx.planner.autonomy_history(decided.job_id)
    latest = history[-1] if history else None
    await tx.planner.add_autonomy_step(learnt(latest, decided.job_id, approved, decided.id, now))


async def _audit(tx: Repositories, actor: str, decided: Proposal, now: datetime) -> None:
    """An admin's decision, in the audit log: approved (applied, or refused by the guardrails
    checked again) or rejected."""
    action: AuditAction = "reject" if decided.status is ProposalStatus.REJECTED else "approve"
    detail = f"{decided.status.value}: {decided.outcome or ''}"
    await tx.access.record(audit_entry(actor, action, decided.id, detail, now))


def _decided(
    proposal: Proposal, status: ProposalStatus, by: str, outcome: str, now: datetime
) -> Proposal:
    return replace(proposal, status=status, decided_by=by, decided_at=now, outcome=outcome)
