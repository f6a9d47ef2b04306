"""Guardrails: the limits every proposal passes before it may touch a schedule.

Pure: the caller supplies the endpoint as stored, how many changes were applied to it in the
last hour, and `now`. A refusal is a sentence a person (or the model) can act on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from cronpilot.domain.model import Endpoint, IntervalHint, OneShotHint, Pause
from cronpilot.domain.planning.churn import cooling
from cronpilot.domain.planning.controllers import Controller, held
from cronpilot.domain.planning.planning import Proposal, ProposalDraft, ProposalKind
from cronpilot.domain.rules.rule_firing import FiringRule, contradiction
from cronpilot.domain.runs.transitions import with_hints, with_pause

RATE_WINDOW = timedelta(hours=1)


class GuardrailRule(StrEnum):
    """Which guardrail refused a proposal: a bounded name to count refusals by (metrics)."""

    REASON = "reason"
    RATE = "rate"
    AFTER_UPSTREAMS = "after_upstreams"
    INTERVAL = "interval"
    TTL = "ttl"
    NEXT_TIME = "next_time"
    PAUSE = "pause"
    NOT_PAUSED = "not_paused"
    RULE = "rule"
    """The proposal contradicts a response rule that holds for the endpoint."""
    COOL_DOWN = "cool_down"
    """The endpoint's interval proposals alternated direction (`domain.planning.churn`)."""
    REJECTED = "rejected"
    """An admin rejected the same change within its cool-down (`domain.planning.rejections`)."""
    HELD = "held"
    """A higher controller's change stands, or the last change dwells
    (`domain.planning.controllers`)."""


@dataclass(frozen=True, slots=True)
class Refusal:
    rule: GuardrailRule
    text: str
    """What to do about it, in a sentence a person (or the model) can act on."""

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True, slots=True)
class GuardrailLimits:
    """The limits as configured: made from the settings (`planner_max_*`,
    `planner_proposal_ttl_seconds`), which hold their defaults, in `adapters/configs.py`."""

    max_pause_seconds: float
    max_changes_per_hour: int
    """Applied changes per endpoint per hour: more would be oscillation."""
    max_hint_ttl_seconds: float
    pending_ttl_seconds: float
    """A proposal held for review lapses after this long."""
    rejection_cooldown_seconds: float
    """How long an admin's rejection holds the same change back (`domain.planning.rejections`),
    unless the job says otherwise."""
    dwell_seconds: float = 120.0
    """How long any change stands before the planner may change the endpoint again
    (`rules_dwell_seconds`, decision 0048)."""


def refusal(
    draft: ProposalDraft,
    endpoint: Endpoint,
    changes_last_hour: int,
    now: datetime,
    limits: GuardrailLimits,
    *,
    firing: FiringRule | None = None,
    recent: Sequence[Proposal] = (),
    ruled: bool = False,
    urgent: bool = False,
    by: Controller = Controller.PLANNER,
) -> Refusal | None:
    """Why `draft` may not be applied to `endpoint` now, or None when it may. `firing` is the
    endpoint's rule that holds, when the proposer is not that rule: its proposal may not
    contradict the rule. `recent` are the endpoint's latest proposals, newest first: an
    interval that continues their alternation waits for the cool-down (`domain.planning.churn`).
    `ruled`: a response rule proposes; its dwell (`domain.rules.rule_damping`) damps it instead of
    the cool-down, and it counts in the hourly rate as any planner does unless it is `urgent`
    (decision 0032). `by`: who changes the endpoint; a lower controller waits while a higher
    one's change stands, and the planner for the dwell of the last change (decision 0048: a
    rule's own dwell is `domain.rules.rule_damping`'s)."""
    if not draft.reason.strip():
        return Refusal(GuardrailRule.REASON, "a reason is required")
    waits = None if urgent else holding(by, endpoint, recent, now, limits)
    if waits is not None:
        return waits
    if firing is not None:
        against = contradiction(firing.rule.then, draft)
        if against is not None:
            return Refusal(GuardrailRule.RULE, f"{firing.said()} holds, and {against}")
    cool_until = None if ruled else cooling(draft, recent, now)
    if cool_until is not None:
        return Refusal(
            GuardrailRule.COOL_DOWN,
            "the last interval proposals alternated direction; the interval is held until "
            f"{cool_until.isoformat()}",
        )
    if not urgent and changes_last_hour >= limits.max_changes_per_hour:
        return Refusal(
            GuardrailRule.RATE,
            f"{changes_last_hour} changes were applied to this endpoint in the last hour; "
            f"the limit is {limits.max_changes_per_hour}",
        )
    moves_schedule = draft.kind in (
        ProposalKind.INTERVAL,
        ProposalKind.NEXT_TIME,
        ProposalKind.RUN_NOW,
    )
    if moves_schedule and endpoint.spec.schedule.after_upstreams:
        return Refusal(
            GuardrailRule.AFTER_UPSTREAMS,
            "the endpoint runs after its upstreams (depends_on) and has no schedule a hint "
            "could move; pause it or change its upstreams' schedules",
        )
    bounds = bounds_refusal(draft, endpoint, now, limits)
    if bounds is None and draft.kind is ProposalKind.RESUME and endpoint.pause is None:
        return Refusal(GuardrailRule.NOT_PAUSED, "the endpoint is not paused")
    return bounds


def holding(
    by: Controller,
    endpoint: Endpoint,
    recent: Sequence[Proposal],
    now: datetime,
    limits: GuardrailLimits,
) -> Refusal | None:
    """Why a change by `by` waits on the endpoint now (`domain.planning.controllers.held`), or
    None."""
    dwell = limits.dwell_seconds if by is Controller.PLANNER else 0.0
    waits = held(by, endpoint, recent, now, dwell)
    return None if waits is None else Refusal(GuardrailRule.HELD, waits.text)


def bounds_refusal(
    draft: ProposalDraft, endpoint: Endpoint, now: datetime, limits: GuardrailLimits
) -> Refusal | None:
    """Whether `draft` oversteps the bounds of its kind, whatever the endpoint's history: the
    clamps and the floor of an interval, a ttl, the longest pause, a next time to come. What
    the planner exams score as "within clamps" (`harness.exams.scores`)."""
    if draft.kind is ProposalKind.INTERVAL:
        return _interval_refusal(draft, endpoint, limits)
    if draft.kind is ProposalKind.NEXT_TIME:
        return _next_time_refusal(draft, now, limits)
    if draft.kind is ProposalKind.PAUSE:
        return _pause_refusal(draft, now, limits)
    if draft.kind is ProposalKind.RUN_NOW:
        return _ttl_refusal(draft, limits)
    return None


def _ttl_refusal(draft: ProposalDraft, limits: GuardrailLimits) -> Refusal | None:
    ttl = draft.ttl_seconds
    if ttl is None or ttl <= 0:
        return Refusal(GuardrailRule.TTL, "ttl_seconds must be positive")
    if ttl > limits.max_hint_ttl_seconds:
        return Refusal(
            GuardrailRule.TTL,
            f"ttl_seconds {ttl:g} exceeds the maximum {limits.max_hint_ttl_seconds:g}",
        )
    return None


def _interval_refusal(
    draft: ProposalDraft, endpoint: Endpoint, limits: GuardrailLimits
) -> Refusal | None:
    interval = draft.interval_seconds
    spec = endpoint.spec
    if interval is None or interval <= 0:
        why = "interval_seconds must be positive"
    elif interval < spec.floor_seconds:
        why = f"interval {interval:g}s is below the floor {spec.floor_seconds:g}s"
    elif spec.min_interval_seconds is not None and interval < spec.min_interval_seconds:
        why = f"interval {interval:g}s is below the minimum {spec.min_interval_seconds:g}s"
    elif spec.max_interval_seconds is not None and interval > spec.max_interval_seconds:
        why = f"interval {interval:g}s is above the maximum {spec.max_interval_seconds:g}s"
    else:
        return _ttl_refusal(draft, limits)
    return Refusal(GuardrailRule.INTERVAL, why)


def _next_time_refusal(
    draft: ProposalDraft, now: datetime, limits: GuardrailLimits
) -> Refusal | None:
    if draft.at is None or draft.at <= now:
        return Refusal(GuardrailRule.NEXT_TIME, "the next time must be in the future")
    ttl = _ttl_refusal(draft, limits)
    if ttl is not None:
        return ttl
    assert draft.ttl_seconds is not None
    if draft.at >= now + timedelta(seconds=draft.ttl_seconds):
        return Refusal(
            GuardrailRule.NEXT_TIME,
            "the next time falls after the hint expires; lengthen ttl_seconds",
        )
    return None


def _pause_refusal(draft: ProposalDraft, now: datetime, limits: GuardrailLimits) -> Refusal | None:
    if draft.at is None or draft.at <= now:
        return Refusal(GuardrailRule.PAUSE, "a pause must end in the future")
    if draft.at - now > timedelta(seconds=limits.max_pause_seconds):
        return Refusal(
            GuardrailRule.PAUSE, f"a pause may last at most {limits.max_pause_seconds:g}s"
        )
    return None


@dataclass(frozen=True, slots=True)
class ScheduleChange:
    """What applying a proposal writes: both hints and the pause, as they will stand."""

    interval_hint: IntervalHint | None
    oneshot_hint: OneShotHint | None
    pause: Pause | None


def change_for(
    draft: ProposalDraft, endpoint: Endpoint, now: datetime, *, by: str
) -> ScheduleChange:
    """The endpoint's hints and pause once `draft` (already past the guardrails) is applied;
    a hint's TTL counts from `now`, the moment it is applied, and a pause is `by` the actor
    who proposed it (`domain.access.access.planner_actor`)."""
    interval, oneshot, pause = endpoint.interval_hint, endpoint.oneshot_hint, endpoint.pause
    expires = now + timedelta(seconds=draft.ttl_seconds or 0)
    if draft.kind is ProposalKind.INTERVAL:
        assert draft.interval_seconds is not None
        interval = IntervalHint(draft.interval_seconds, expires, draft.reason)
    elif draft.kind is ProposalKind.NEXT_TIME:
        assert draft.at is not None
        oneshot = OneShotHint(draft.at, expires, draft.reason)
    elif draft.kind is ProposalKind.RUN_NOW:
        oneshot = OneShotHint(now, expires, draft.reason)
    elif draft.kind is ProposalKind.PAUSE:
        pause = Pause(draft.reason, draft.at, by)
    elif draft.kind is ProposalKind.BASELINE:
        interval, oneshot = None, None
    else:
        pause = None
    return ScheduleChange(interval, oneshot, pause)


def changed_by(endpoint: Endpoint, change: ScheduleChange, now: datetime) -> Endpoint:
    """The endpoint once `change` is written: its pause, then its hints, each only where it
    differs, re-planned (`transitions.with_pause`, `with_hints`); the same object when the
    change is in force already."""
    changed = endpoint
    if change.pause != endpoint.pause:
        changed = with_pause(changed, change.pause, now)
    if (change.interval_hint, change.oneshot_hint) != (
        endpoint.interval_hint,
        endpoint.oneshot_hint,
    ):
        changed = with_hints(changed, change.interval_hint, change.oneshot_hint, now)
    return changed
