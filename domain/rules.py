"""Response rules (decision 0026): per endpoint, ordered `when: <condition>` → `then: <action>`.

The rules planner evaluates an endpoint's rules in order whenever its job has new runs; the
first rule that holds wins, and its action becomes a proposal through the same desk as the
heuristic's and the LLM's (guardrails, review mode, audit). Pure: what an action proposes,
whether it is already in force, and whether another planner's proposal contradicts it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from cronpilot.domain.model import JSON, Endpoint
from cronpilot.domain.planning import Proposal, ProposalDraft, ProposalKind, ProposalStatus

RULES_PLANNER = "rules"
"""The proposer and the planner of a rules session."""
DEFAULT_RULE_TTL_SECONDS = 3600.0
"""How long an interval a rule sets stands unless it says (`ttl`); while the rule keeps
holding it is proposed again once it has lapsed."""
RUN_NOW_LEAD_SECONDS = 1.0
"""`run_now` asks for a run this soon (the governor's floor and clamps still apply)…"""
RUN_NOW_TTL_SECONDS = 300.0
"""…with a one-shot hint that stands this long."""


class ActionKind(StrEnum):
    INTERVAL = "interval"
    RUN_NOW = "run_now"
    PAUSE = "pause"
    RESUME = "resume"
    BASELINE = "baseline"
    """Drop the hints: back to the declared schedule."""


ACTION_PROPOSALS = {
    ActionKind.INTERVAL: ProposalKind.INTERVAL,
    ActionKind.RUN_NOW: ProposalKind.NEXT_TIME,
    ActionKind.PAUSE: ProposalKind.PAUSE,
    ActionKind.RESUME: ProposalKind.RESUME,
    ActionKind.BASELINE: ProposalKind.BASELINE,
}
"""The proposal each action makes."""


@dataclass(frozen=True, slots=True)
class RuleAction:
    kind: ActionKind
    interval_seconds: float | None = None
    """`interval` only: the interval to run at."""
    ttl_seconds: float | None = None
    """`interval` only: how long it stands; None: `DEFAULT_RULE_TTL_SECONDS`."""
    for_seconds: float | None = None
    """`pause` only: how long the pause lasts."""

    def text(self) -> str:
        """`interval 30s (ttl 1h)`, `pause for 600s`, `run_now`: as a person reads it."""
        if self.kind is ActionKind.INTERVAL:
            ttl = "" if self.ttl_seconds is None else f" (ttl {self.ttl_seconds:g}s)"
            return f"interval {self.interval_seconds:g}s{ttl}"
        if self.kind is ActionKind.PAUSE:
            return f"pause for {self.for_seconds:g}s"
        return self.kind.value


@dataclass(frozen=True, slots=True)
class Rule:
    when: str
    """A CEL condition over the latest responses of the endpoint and its siblings."""
    then: RuleAction


class RuleOutcome(StrEnum):
    """What became of one rule evaluation: a bounded name to count them by (metrics)."""

    NOT_HELD = "not_held"
    PROPOSED = "proposed"
    """Held: its action was proposed (applied or held for review)."""
    IN_FORCE = "in_force"
    """Held, but its action is already in force or waiting for review: nothing proposed."""
    REFUSED = "refused"
    """Held, but a guardrail refused its proposal."""
    ERROR = "error"
    """The condition could not be evaluated (a missing field, a wrong type): taken as not
    holding, recorded, and the next rule is tried."""


@dataclass(frozen=True, slots=True)
class RuleEvaluation:
    """One rule evaluation of a rules session, in order: what the condition gave and what
    came of it."""

    number: int
    """The rule's position, counted from 1 (`rules[number - 1]` in the jobs file)."""
    when: str
    outcome: RuleOutcome
    value: JSON = None
    """What the condition evaluated to; None when it could not be evaluated."""
    detail: str = ""
    """What was proposed, why nothing was, or the error."""
    proposal_id: str | None = None


@dataclass(frozen=True, slots=True)
class FiringRule:
    """The rule that holds for an endpoint in this planner round: other planners' proposals
    for the endpoint may not contradict it (`contradiction`)."""

    number: int
    ref: str
    """The endpoint's `job/endpoint`."""
    rule: Rule
    value: JSON

    def said(self) -> str:
        """`rule 1 of flash-sale/investigator: fraud_score.body.fraud_rate > 0.05 = true`."""
        return f"rule {self.number} of {self.ref}: {self.rule.when} = {value_text(self.value)}"


def value_text(value: JSON) -> str:
    """A condition's value as CEL writes it (`true`, `0.07`, `"ok"`)."""
    return json.dumps(value, ensure_ascii=False, default=str)


def rule_draft(firing: FiringRule, now: datetime) -> ProposalDraft:
    """The proposal the firing rule makes at `now`; its reason names the rule and its value."""
    action = firing.rule.then
    reason = f"proposed by {firing.said()}"
    kind = ACTION_PROPOSALS[action.kind]
    if action.kind is ActionKind.INTERVAL:
        ttl = action.ttl_seconds or DEFAULT_RULE_TTL_SECONDS
        return ProposalDraft(
            kind, reason, interval_seconds=action.interval_seconds, ttl_seconds=ttl
        )
    if action.kind is ActionKind.RUN_NOW:
        at = now + timedelta(seconds=RUN_NOW_LEAD_SECONDS)
        return ProposalDraft(kind, reason, at=at, ttl_seconds=RUN_NOW_TTL_SECONDS)
    if action.kind is ActionKind.PAUSE:
        assert action.for_seconds is not None
        return ProposalDraft(kind, reason, at=now + timedelta(seconds=action.for_seconds))
    return ProposalDraft(kind, reason)


def already_standing(
    action: RuleAction,
    endpoint: Endpoint,
    pending: list[Proposal],
    now: datetime,
    *,
    held_before: bool,
) -> str | None:
    """Why `action` need not be proposed again (in words), or None when it must be: it is in
    force on `endpoint`, a proposal of it waits for review, or (for `run_now`, an event, not a
    state) the rule held on the previous pass already (`held_before`) and asked for its run
    then. A pause an admin set is never the rules' to lift."""
    waiting = [p for p in pending if p.status is ProposalStatus.PENDING and _agrees(action, p)]
    if waiting:
        return f"proposal {waiting[0].id} waits for review"
    interval = endpoint.interval_hint
    fresh_interval = interval if interval is not None and interval.expires_at > now else None
    shot = endpoint.oneshot_hint
    fresh_shot = shot if shot is not None and shot.expires_at > now else None
    pause = endpoint.pause
    if action.kind is ActionKind.INTERVAL:
        wanted = action.interval_seconds
        if fresh_interval is not None and fresh_interval.interval_seconds == wanted:
            return f"already in force: every {wanted:g}s"
    elif action.kind is ActionKind.RUN_NOW:
        if fresh_shot is not None:
            return f"already in force: a run at {fresh_shot.at.isoformat()}"
        if held_before:
            return "asked for its run when it began to hold"
    elif action.kind is ActionKind.PAUSE:
        if pause is not None:
            return "already in force: paused"
    elif action.kind is ActionKind.RESUME:
        if pause is None:
            return "already in force: not paused"
        if pause.by is not None:
            return f"paused by {pause.by}: an admin's pause is lifted by an admin"
    elif fresh_interval is None and fresh_shot is None:
        return "already in force: no hints"
    return None


def _agrees(action: RuleAction, proposal: Proposal) -> bool:
    return contradiction(action, proposal.draft) is None


def contradiction(action: RuleAction, draft: ProposalDraft) -> str | None:
    """How `draft` contradicts a firing rule's `action`, or None when it agrees: the same kind
    of change (any pause for a pause, any run time for `run_now`), and for an interval the
    same interval."""
    kind = ACTION_PROPOSALS[action.kind]
    if draft.kind is not kind:
        return f"it proposes {draft.kind.value} where the rule says {action.text()}"
    if kind is ProposalKind.INTERVAL and draft.interval_seconds != action.interval_seconds:
        return f"it proposes interval {draft.interval_seconds}s where the rule says {action.text()}"
    return None
