"""Graded autonomy (decision 0029): what a `graded` planner may do on its own, by the confidence
of the analysis that proposed it, weighed by how far an interval proposal departs from the
built-in planner's suggestion (decision 0058), and the per-job threshold learnt from admins'
decisions.

Pure: the caller supplies the endpoint, the draft, the confidence and the job's latest step.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from cronpilot.domain.model import Endpoint
from cronpilot.domain.planning.planning import ProposalDraft, ProposalKind

CONFIDENCE_FLOOR = 0.70
"""Below it a proposal is recorded and dropped."""
START_THRESHOLD = 0.92
"""At or above the job's threshold a proposal is applied at once; between the floor and the
threshold it is held for review."""
MIN_THRESHOLD, MAX_THRESHOLD = 0.80, 0.98
DECISIONS_PER_MOVE = 5
"""Admins' decisions on held proposals counted before the threshold moves once."""
APPROVAL_STEP = 0.01
REJECTION_STEP = 0.02
"""A rejection weighs twice an approval: acting wrongly on its own costs more than asking."""
DEPARTURE_STEP = 0.1
"""Confidence taken off an interval proposal per doubling by which it lies outside the span
from the current interval to the suggested one: a step towards the suggestion costs nothing,
one past it or the other way costs more the farther it goes."""
SAFE_METHODS = frozenset({"GET", "HEAD"})
TIMED_KINDS = frozenset({ProposalKind.RUN_NOW, ProposalKind.NEXT_TIME})
"""Kinds that make a call happen at a chosen moment: never unreviewed on a dangerous endpoint."""


class Gate(StrEnum):
    APPLY = "apply"
    HOLD = "hold"
    DROP = "drop"


@dataclass(frozen=True, slots=True)
class Gated:
    gate: Gate
    why: str


def dangerous(endpoint: Endpoint) -> bool:
    """Whether a call at a moment the planner chose could do harm: a method that changes
    something, or the user's `dangerous: true`."""
    return endpoint.spec.dangerous or endpoint.spec.method.upper() not in SAFE_METHODS


@dataclass(frozen=True, slots=True)
class Suggested:
    """The interval in force and the one the built-in planner suggests (its best split)."""

    current_seconds: float
    suggested_seconds: float


def departure(interval: float, suggested: Suggested) -> float:
    """How many times farther than the span from the current interval to the suggested one
    `interval` lies: 1 within it."""
    low = min(suggested.current_seconds, suggested.suggested_seconds)
    high = max(suggested.current_seconds, suggested.suggested_seconds)
    return max(low / interval, interval / high, 1.0)


def weighed(
    draft: ProposalDraft, confidence: float, suggested: Suggested | None
) -> tuple[float, str]:
    """The confidence `draft` is gated by, and how it was weighed, in words: an interval
    proposal loses `DEPARTURE_STEP` per doubling of its departure from the suggestion."""
    shown = f"confidence {confidence:g}"
    interval = draft.interval_seconds
    if suggested is None or draft.kind is not ProposalKind.INTERVAL or interval is None:
        return confidence, shown
    far = departure(interval, suggested)
    if far <= 1:
        return confidence, shown
    less = round(DEPARTURE_STEP * math.log2(far), 4)
    kept = round(confidence - less, 4)
    said = (
        f"confidence {confidence:g} less {less:g} for departing x{far:.2g} from the suggested "
        f"{suggested.suggested_seconds:g}s = {kept:g}"
    )
    return kept, said


def gate(
    draft: ProposalDraft,
    endpoint: Endpoint,
    confidence: float | None,
    threshold: float,
    suggested: Suggested | None = None,
) -> Gated:
    """What becomes of `draft` in graded mode. `confidence` None is a deterministic proposer
    (a response rule): applied like a certain one. `suggested`: the built-in planner's
    suggestion for the endpoint, which an interval proposal is weighed against (`weighed`)."""
    shown = "a rule"
    if confidence is not None:
        confidence, shown = weighed(draft, confidence, suggested)
    if confidence is not None and confidence < CONFIDENCE_FLOOR:
        why = f"{shown} is below the floor {CONFIDENCE_FLOOR:g}"
        return Gated(Gate.DROP, why)
    if draft.kind in TIMED_KINDS and dangerous(endpoint):
        return Gated(
            Gate.HOLD,
            f"{draft.kind.value} on a dangerous endpoint ({endpoint.spec.method}) waits "
            "for review whatever the confidence",
        )
    if confidence is not None and confidence < threshold:
        return Gated(Gate.HOLD, f"{shown} is below the job's threshold {threshold:g}")
    return Gated(Gate.APPLY, f"{shown} is at or above the job's threshold {threshold:g}")


@dataclass(frozen=True, slots=True)
class AutonomyStep:
    """One admin decision on a held proposal of a graded job, and the threshold after it.
    `approvals` and `rejections` count the decisions since the threshold last moved."""

    job_id: str
    at: datetime
    threshold: float
    approvals: int
    rejections: int
    note: str
    proposal_id: str | None = None


def threshold_of(latest: AutonomyStep | None) -> float:
    return START_THRESHOLD if latest is None else latest.threshold


def learnt(
    latest: AutonomyStep | None,
    job_id: str,
    approved: bool,
    proposal_id: str,
    at: datetime,
) -> AutonomyStep:
    """The job's step after an admin approved (or rejected) a held proposal: once
    `DECISIONS_PER_MOVE` decisions are counted, the threshold moves down by `APPROVAL_STEP` per
    approval and up by `REJECTION_STEP` per rejection, within [MIN, MAX], and the count
    starts again."""
    before = threshold_of(latest)
    approvals = (latest.approvals if latest else 0) + approved
    rejections = (latest.rejections if latest else 0) + (not approved)
    decided = "approved" if approved else "rejected"
    if approvals + rejections < DECISIONS_PER_MOVE:
        note = f"{decided}: {approvals} approved, {rejections} rejected since the last move"
        return AutonomyStep(job_id, at, before, approvals, rejections, note, proposal_id)
    moved = before - APPROVAL_STEP * approvals + REJECTION_STEP * rejections
    after = round(min(MAX_THRESHOLD, max(MIN_THRESHOLD, moved)), 4)
    counted = f"{approvals} approved, {rejections} rejected"
    note = f"{decided}: {counted}: threshold {before:g} → {after:g}"
    return AutonomyStep(job_id, at, after, 0, 0, note, proposal_id)


def moves(history: Sequence[AutonomyStep]) -> list[AutonomyStep]:
    """The steps (oldest first) at which the threshold changed."""
    shown: list[AutonomyStep] = []
    before = START_THRESHOLD
    for step in history:
        if step.threshold != before:
            shown.append(step)
        before = step.threshold
    return shown
