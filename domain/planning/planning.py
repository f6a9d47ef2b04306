"""Entities of the planner: proposals, analysis sessions and the tool calls inside them.

A proposal is what a planner (the LLM or the built-in one) wants to change on one endpoint; an
analysis session is one planner look at one endpoint, kept whole so that an admin can audit it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum

from cronpilot.domain.graph.graph import Edge
from cronpilot.domain.graph.outputs import OutputSchema
from cronpilot.domain.model import JSON, Endpoint, Job, PlannerMode, Run
from cronpilot.domain.rules.rules import RuleEvaluation, Streak


class ProposalKind(StrEnum):
    INTERVAL = "interval"
    NEXT_TIME = "next_time"
    PAUSE = "pause"
    RESUME = "resume"
    BASELINE = "baseline"
    """Drop the hints: back to the declared schedule (a rule's `baseline`)."""
    RUN_NOW = "run_now"
    """One run as soon as it is applied (a rule's `run_now`): unlike a next time, it cannot
    have passed while it waited for review."""


class ProposalStatus(StrEnum):
    PENDING = "pending"
    """Held for an admin (`review` mode) until approved, rejected or expired."""
    APPLIED = "applied"
    REJECTED = "rejected"
    REFUSED = "refused"
    """Stopped by a guardrail; never applied."""
    EXPIRED = "expired"
    DROPPED = "dropped"
    """Made with a confidence below the floor (`graded` mode): recorded, never applied."""
    SUPERSEDED = "superseded"
    """Pending until a newer proposal for its endpoint was held or applied (`superseded`):
    never applied, and no longer open to a decision."""


class SessionStatus(StrEnum):
    SUBMITTED = "submitted"
    """The planner ended the session with `submit_analysis`."""
    EXHAUSTED = "exhausted"
    """The step or token budget ran out before a valid `submit_analysis`."""
    FAILED = "failed"
    """The LLM could not be reached (after retries), gave no usable answer (no chat completion,
    or no tool call twice in a row), or a stop cut the session short; the planner backs off."""
    EVALUATED = "evaluated"
    """A rules session: the endpoint's rules were evaluated (`domain.rules.rules`)."""


@dataclass(frozen=True, slots=True)
class ProposalDraft:
    """What an action tool asked for, before guardrails. `at` is the one-shot time (next_time)
    or the end of a pause (pause); `ttl_seconds` is how long a hint stands."""

    kind: ProposalKind
    reason: str
    interval_seconds: float | None = None
    at: datetime | None = None
    ttl_seconds: float | None = None


@dataclass(frozen=True, slots=True)
class Proposal:
    id: str
    endpoint_id: str
    job_id: str
    kind: ProposalKind
    reason: str
    proposed_by: str
    """`freshness`, `rules`, `llm:<model>`: who or what proposed it."""
    created_at: datetime
    status: ProposalStatus
    session_id: str | None = None
    interval_seconds: float | None = None
    at: datetime | None = None
    ttl_seconds: float | None = None
    expires_at: datetime | None = None
    """When a pending proposal lapses unless decided."""
    decided_by: str | None = None
    decided_at: datetime | None = None
    outcome: str | None = None
    """What happened, in words: the hint written, the guardrail that refused it, the admin's
    reason for rejecting it."""
    confidence: float | None = None
    """The confidence of the analysis that made it, in `graded` mode
    (`domain.planning.autonomy`)."""
    superseded_by: str | None = None
    """The newer proposal that superseded this one, when `superseded`."""

    @property
    def draft(self) -> ProposalDraft:
        return ProposalDraft(
            self.kind, self.reason, self.interval_seconds, self.at, self.ttl_seconds
        )


def proposal_outcome(proposal: Proposal) -> str:
    """What became of a proposal when it was made, for the record of the call that made it."""
    if proposal.status is ProposalStatus.PENDING:
        return f"held for review as proposal {proposal.id}"
    if proposal.status is ProposalStatus.REFUSED:
        return f"refused by a guardrail: {proposal.outcome} (proposal {proposal.id})"
    if proposal.status is ProposalStatus.DROPPED:
        return f"dropped: {proposal.outcome} (proposal {proposal.id})"
    return f"{proposal.outcome or proposal.status.value} (proposal {proposal.id})"


@dataclass(frozen=True, slots=True)
class ToolCallRecord:
    """One tool call of a session, in order: what was asked, how long it took, what came back."""

    seq: int
    name: str
    arguments: JSON
    duration_ms: float
    result_chars: int
    error: str | None = None
    outcome: str | None = None
    """What the call did, in words, for an action (`held for review as proposal …`, `refused by
    a guardrail: …`) or the final submit; None for a read, an error, and calls recorded before
    outcomes were."""


@dataclass(frozen=True, slots=True)
class AnalysisSession:
    id: str
    endpoint_id: str
    job_id: str
    planner: str
    """`freshness` or `llm:<model>`."""
    started_at: datetime
    finished_at: datetime
    status: SessionStatus
    reasoning: str = ""
    confidence: float | None = None
    next_analysis_at: datetime | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tool_errors: int = 0
    error: str | None = None
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    rule_evaluations: list[RuleEvaluation] = field(default_factory=list)
    """A rules session's evaluations, in order, up to the first rule that held."""


@dataclass(frozen=True, slots=True)
class AnalysisClaim:
    """An endpoint leased to one planner worker for analysis, with its effective mode."""

    endpoint: Endpoint
    mode: PlannerMode
    lease_until: datetime
    llm_failures: int = 0
    """Consecutive failed sessions before this one (the backoff's exponent)."""
    analysis_due: bool = True
    """Whether the analyst (LLM or built-in) is due (`needs_analysis`); when not, the endpoint
    was claimed for its rules alone (`needs_rules`)."""
    rule_held: int | None = None
    """The rule whose action stood after the previous rules pass (`PlannerState.rule_held`)."""
    rule_streak: Streak | None = None
    """The rule that held first on the previous rules passes, and since when
    (`PlannerState.rule_streak`)."""


@dataclass(frozen=True, slots=True)
class AnalysisContext:
    """What an analysis reads before its first tool call, read together at its start."""

    job: Job
    endpoints: list[Endpoint]
    """The job's endpoints by name, the analysed one included."""
    recent: list[Run]
    """The analysed endpoint's newest runs, newest slot first."""
    edges: list[Edge]
    """The graph edges with an end in the job, as `GraphRepository.list_edges(job)`."""
    schema: OutputSchema | None
    """The analysed endpoint's learnt output schema, None before its first body."""
    newest_finished_slot: datetime | None
    """The newest slot of the job's finished runs: the session has seen it, later ones are
    new (the same slot `needs_analysis` compares)."""
    latest: dict[str, Run]
    """The newest run of each of the job's endpoints that has one, by endpoint id."""
    window: list[Run]
    """The analysed endpoint's newest runs, newest slot first, as many as its health by window
    reads (`recent` is their head)."""


@dataclass(frozen=True, slots=True)
class AnalysisOutcome:
    """What `finish_analysis` records on the endpoint's planner state."""

    seen_slot_at: datetime | None
    """The newest run slot of the job the session could see: later ones are "new" next time."""
    seen_failing: bool
    next_analysis_at: datetime
    failed: bool
    """True when the LLM could not be reached: counts towards the planner's backoff."""


@dataclass(frozen=True, slots=True)
class RulesPass:
    """What a rules pass records: its session, and on the endpoint's planner state the newest
    run slot of the job it saw and the rule whose action stands."""

    session: AnalysisSession | None
    """None when the pass was quiet (`domain.schedule.quiet_passes`): nothing is stored of it."""
    seen_slot_at: datetime | None
    held: int | None
    """The number of the rule that held and whose action was proposed or already stood; None
    when no rule held, a guardrail refused its proposal, or it was held back (it is tried
    again)."""
    streak: Streak | None = None
    """The rule that held first, and since when (`domain.rules.rule_damping.streak_after`)."""


def effective_mode(endpoint_mode: PlannerMode | None, job_mode: PlannerMode) -> PlannerMode:
    """An endpoint's own mode wins over its job's."""
    return endpoint_mode if endpoint_mode is not None else job_mode


@dataclass(frozen=True, slots=True)
class PlannerState:
    """The planner's bookkeeping of one endpoint (memory store; SQL keeps it in a table)."""

    endpoint_id: str
    seen_slot_at: datetime | None = None
    seen_failing: bool = False
    next_analysis_at: datetime | None = None
    llm_failures: int = 0
    retry_at: datetime | None = None
    lease_owner: str | None = None
    lease_until: datetime | None = None
    rules_seen_slot_at: datetime | None = None
    """The newest finished slot of the job that the endpoint's rules were evaluated on."""
    rule_held: int | None = None
    """`RulesPass.held` of the last rules pass."""
    rule_streak: Streak | None = None
    """`RulesPass.streak` of the last rules pass."""
    last_analysed_at: datetime | None = None
    """When a pass (analyst or rules, stored or quiet) last finished: "last looked at"."""


def _claimable(state: PlannerState, mode: PlannerMode, now: datetime) -> bool:
    """Not off, and not leased by a live planner."""
    live = state.lease_until is not None and state.lease_until >= now
    return mode is not PlannerMode.OFF and not live


def _newer(newest_slot: datetime | None, seen: datetime | None) -> bool:
    """Whether the job has finished runs past the slot `seen`."""
    return newest_slot is not None and (seen is None or newest_slot > seen)


def needs_analysis(
    state: PlannerState,
    endpoint: Endpoint,
    mode: PlannerMode,
    newest_slot: datetime | None,
    now: datetime,
) -> bool:
    """Whether a planner should pick the endpoint at `now`: not off, not leased by a live
    planner, not backing off, and either new finished runs once its next analysis time has come,
    or a failure state that changed since the last look.

    `newest_slot` is the newest finished run of the endpoint's whole job: siblings' answers
    drive dependent endpoints (an investigator paused until a fraud score rises has no runs of
    its own to look at).

    The SQL store says the same in SQL (`adapters.sql.planner_repo._candidates`), proven by
    `tests/contract/test_rules_contract.py`."""
    if not _claimable(state, mode, now):
        return False
    if state.retry_at is not None and state.retry_at > now:
        return False
    failing = endpoint.failure_count > 0
    if failing != state.seen_failing:
        return True
    due = state.next_analysis_at is None or state.next_analysis_at <= now
    return _newer(newest_slot, state.seen_slot_at) and due


def needs_rules(
    state: PlannerState,
    endpoint: Endpoint,
    mode: PlannerMode,
    newest_slot: datetime | None,
    now: datetime,
) -> bool:
    """Whether a planner should pick the endpoint at `now` for its rules: not off, not leased
    by a live planner, with rules, and its job has finished runs the rules have not seen. The
    LLM's backoff and next analysis time do not hold rules back: they are evaluated on every
    new run of the job.

    Mirrored in SQL beside `needs_analysis` (`adapters.sql.planner_repo._candidates`)."""
    return (
        bool(endpoint.spec.rules)
        and _claimable(state, mode, now)
        and _newer(newest_slot, state.rules_seen_slot_at)
    )


def analysis_order(state: PlannerState) -> tuple[bool, datetime | None, str]:
    """The order in which endpoints that need analysis are picked: never looked at first, then
    the earliest next analysis time, then by endpoint id. As a sort key."""
    at = state.next_analysis_at
    return at is not None, at, state.endpoint_id


def analysis_busy(state: PlannerState, worker_id: str, now: datetime) -> bool:
    """Whether another planner's live lease keeps `worker_id` from analysing the endpoint by
    hand (`PlannerRepository.claim_endpoint`)."""
    owner, until = state.lease_owner, state.lease_until
    return owner is not None and owner != worker_id and until is not None and until >= now


EXPIRED_BY = "planner"
EXPIRED_OUTCOME = "expired before anyone decided"


def lapsed(proposal: Proposal, now: datetime) -> bool:
    """Whether a proposal held for review has passed its expiry at `now`."""
    return (
        proposal.status is ProposalStatus.PENDING
        and proposal.expires_at is not None
        and proposal.expires_at <= now
    )


def expired(proposal: Proposal, now: datetime) -> Proposal:
    """A lapsed proposal as housekeeping leaves it."""
    return replace(
        proposal,
        status=ProposalStatus.EXPIRED,
        decided_by=EXPIRED_BY,
        decided_at=now,
        outcome=EXPIRED_OUTCOME,
    )


SUPERSEDING = frozenset({ProposalStatus.PENDING, ProposalStatus.APPLIED})
"""The proposals that supersede their endpoint's older pending ones: the newest word on what
the endpoint should do. One refused, dropped or rejected changes nothing, so it supersedes
nothing."""


def superseding_outcome(newer: Proposal) -> str:
    """The outcome of a proposal `newer` superseded."""
    return f"superseded by proposal {newer.id}"


def superseded(older: Proposal, newer: Proposal) -> Proposal:
    """A pending proposal once `newer` (its endpoint's, `SUPERSEDING`) took its place: decided
    when and by whom `newer` was made, pointing at it."""
    return replace(
        older,
        status=ProposalStatus.SUPERSEDED,
        decided_by=newer.proposed_by,
        decided_at=newer.created_at,
        outcome=superseding_outcome(newer),
        superseded_by=newer.id,
    )


@dataclass(frozen=True, slots=True)
class ToolCallRequest:
    """A tool call as the model wrote it: `arguments` is raw text, not yet known to be JSON."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class ChatReply:
    content: str | None
    tool_calls: list[ToolCallRequest]
    prompt_tokens: int = 0
    completion_tokens: int = 0
