"""What a response rule that holds does (decision 0026): the rules planner evaluates an
endpoint's rules in order whenever its job has new runs; the first rule that holds wins, and its
action becomes a proposal through the same desk as the built-in planner's and the LLM's (guardrails,
review mode, audit). Pure: what an action proposes, whether it already stands, and whether
another planner's proposal contradicts it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta

from cronpilot.domain.access.access import RULES_ACTOR, by_person
from cronpilot.domain.model import JSON, Endpoint
from cronpilot.domain.planning.planning import Proposal, ProposalDraft, ProposalKind, ProposalStatus
from cronpilot.domain.rules.rules import ActionKind, Rule, RuleAction

RULES_PLANNER = RULES_ACTOR
"""The proposer and the planner of a rules session."""
URGENT_RULES = f"{RULES_PLANNER}:urgent"
"""The proposer of an `urgent: true` rule's proposal: exempt from dwell and from the hourly
change limit (decision 0032), which its record says."""
DEFAULT_RULE_TTL_SECONDS = 3600.0
"""How long an interval a rule sets stands unless it says (`ttl`); while the rule keeps
holding it is proposed again once it has lapsed."""
RUN_NOW_TTL_SECONDS = 300.0
"""`run_now` asks for one run when applied (the governor's floor and clamps still apply), with a
one-shot hint that stands this long."""


ACTION_PROPOSALS = {
    ActionKind.INTERVAL: ProposalKind.INTERVAL,
    ActionKind.RUN_NOW: ProposalKind.RUN_NOW,
    ActionKind.PAUSE: ProposalKind.PAUSE,
    ActionKind.RESUME: ProposalKind.RESUME,
    ActionKind.BASELINE: ProposalKind.BASELINE,
}
"""The proposal each action makes."""


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


def rule_made(proposed_by: str) -> bool:
    """Whether a proposal's proposer is a response rule (urgent or not)."""
    return proposed_by in (RULES_PLANNER, URGENT_RULES)


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
        return ProposalDraft(kind, reason, ttl_seconds=RUN_NOW_TTL_SECONDS)
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
        if by_person(pause.by):
            return f"paused by {pause.by}: an admin's pause is lifted by an admin"
    elif fresh_interval is None and fresh_shot is None:
        return "already in force: no hints"
    return None


def _agrees(action: RuleAction, proposal: Proposal) -> bool:
    return contradiction(action, proposal.draft) is None


_ONE_RUN = frozenset({ProposalKind.RUN_NOW, ProposalKind.NEXT_TIME})


def contradiction(action: RuleAction, draft: ProposalDraft) -> str | None:
    """How `draft` contradicts a firing rule's `action`, or None when it agrees: the same kind
    of change (any pause for a pause, one run at any time for `run_now`), and for an interval
    the same interval."""
    kind = ACTION_PROPOSALS[action.kind]
    same = draft.kind is kind or {draft.kind, kind} <= _ONE_RUN
    if not same:
        return f"it proposes {draft.kind.value} where the rule says {action.text()}"
    if kind is ProposalKind.INTERVAL and draft.interval_seconds != action.interval_seconds:
        proposed = "no" if draft.interval_seconds is None else f"{draft.interval_seconds:g}s"
        return f"it proposes interval {proposed} where the rule says {action.text()}"
    return None
