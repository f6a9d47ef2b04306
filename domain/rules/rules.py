"""Response rules (decision 0026): per endpoint, ordered `when: <condition>` → `then: <action>`,
as declared, and the record of their evaluation. What a firing rule proposes is
`domain.rules.rule_firing`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from cronpilot.domain.model import JSON


class ActionKind(StrEnum):
    INTERVAL = "interval"
    RUN_NOW = "run_now"
    PAUSE = "pause"
    RESUME = "resume"
    BASELINE = "baseline"
    """Drop the hints: back to the declared schedule."""


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
    for_seconds: float = 0.0
    """How long the condition must have held, on every pass, before the rule fires (`for:`,
    as a Prometheus alert's)."""
    dwell_seconds: float | None = None
    """How long the last change (a rule's, or any applied one) must have stood before this rule
    may replace it (`dwell:`); None: the planner's setting (`rules_dwell_seconds`)."""
    urgent: bool = False
    """Exempt from dwell and from the hourly change limit (`urgent: true`), for emergencies."""


class RuleOutcome(StrEnum):
    """What became of one rule evaluation: a bounded name to count them by (metrics)."""

    NOT_HELD = "not_held"
    PROPOSED = "proposed"
    """Held: its action was proposed (applied or held for review)."""
    IN_FORCE = "in_force"
    """Held, but its action is already in force or waiting for review: nothing proposed."""
    PENDING = "pending"
    """Held, but not yet for as long as its `for:` asks: nothing proposed yet."""
    DWELLING = "dwelling"
    """Held, but the last change has not stood its dwell: nothing proposed yet."""
    REJECTED = "rejected"
    """Held, but an admin rejected the same change within its cool-down: nothing proposed."""
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
class Streak:
    """The rule that was the first to hold on an endpoint's latest rules passes, and the pass
    from which it has been so on every pass (`PlannerState.rule_streak`): how long a rule's
    `for:` has been met (`domain.rules.rule_damping`)."""

    number: int
    since: datetime
