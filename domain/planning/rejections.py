"""The admin's word stands: a rejected proposal holds the same change back for a
cool-down, whoever proposes it again and however sure they are.

Pure: the caller supplies the endpoint's rejected proposals, `now` and the cool-down (the
job's `rejection_cooldown`, else the `planner_rejection_cooldown_seconds` setting).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from cronpilot.domain.planning.planning import Proposal, ProposalDraft, ProposalKind, ProposalStatus

SAME_WITHIN = 0.1
"""How far a value may stray from the rejected one and still be the same change: a planner
that comes back with 4.2 s after 4 s was turned down is asking for the same thing."""
_TIMED = (ProposalKind.NEXT_TIME, ProposalKind.PAUSE)


@dataclass(frozen=True, slots=True)
class StandingRejection:
    """A rejection that holds a change back, and until when."""

    rejection: Proposal
    until: datetime

    def text(self) -> str:
        """Why the change is held back, in words for the session and the model."""
        rejected = self.rejection
        when = rejected.decided_at.isoformat() if rejected.decided_at else "?"
        why = f" ({rejected.outcome})" if rejected.outcome else ""
        return (
            f"the same change was rejected by {rejected.decided_by} at {when}{why}, proposal "
            f"{rejected.id}; it is held until {self.until.isoformat()}"
        )


_ROUNDING = 1e-9
"""Slack for binary fractions: 4.4 s is within 10 % of 4 s, though 4.4 - 4 > 0.4 in floats."""


def _near(value: float, rejected: float) -> bool:
    return abs(value - rejected) <= SAME_WITHIN * abs(rejected) * (1 + _ROUNDING)


def same_change(draft: ProposalDraft, rejected: Proposal, now: datetime) -> bool:
    """Whether `draft`, made at `now`, asks for what `rejected` asked for: the same kind with
    an interval within `SAME_WITHIN`, or a time (a next time, the end of a pause) within
    `SAME_WITHIN` of how far ahead the rejected one lay, read as the same moment or as the same
    time from now. The reason and the hint's ttl are words and lifetimes, not the change."""
    if draft.kind is not rejected.kind:
        return False
    if draft.kind is ProposalKind.INTERVAL:
        if draft.interval_seconds is None or rejected.interval_seconds is None:
            return draft.interval_seconds == rejected.interval_seconds
        return _near(draft.interval_seconds, rejected.interval_seconds)
    if draft.kind in _TIMED:
        if draft.at is None or rejected.at is None:
            return draft.at == rejected.at
        ahead = (rejected.at - rejected.created_at).total_seconds()
        return _near((draft.at - rejected.created_at).total_seconds(), ahead) or _near(
            (draft.at - now).total_seconds(), ahead
        )
    return True


def standing_rejection(
    draft: ProposalDraft, rejected: Sequence[Proposal], now: datetime, cool_down: timedelta
) -> StandingRejection | None:
    """The newest rejection among `rejected` (the endpoint's) of the change `draft` asks for
    whose cool-down, from when it was rejected, has not ended at `now`; None when no rejection
    holds it back."""
    standing = [
        StandingRejection(p, p.decided_at + cool_down)
        for p in rejected
        if p.status is ProposalStatus.REJECTED
        and p.decided_at is not None
        and now < p.decided_at + cool_down
        and same_change(draft, p, now)
    ]
    return max(standing, key=lambda s: s.until, default=None)
