"""Damped response rules (decision 0032): a rule that holds fires only once its condition has
held on every pass for its `for:`, and only once the last change on the endpoint (a rule's, or
any applied one: decision 0048) has stood its dwell (the rule's `dwell:`, else the planner's
setting), unless it is `urgent`. Pure: the rules planner supplies what held before, the
endpoint's latest proposals and `now`.

Without it a rule follows its data as fast as the data moves: the example `queue/processor` went
60 s, 3 s, 60 s, 3 s… — 102 changes in 16 minutes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from cronpilot.domain.planning.planning import Proposal, ProposalStatus
from cronpilot.domain.rules.rule_firing import contradiction, rule_made
from cronpilot.domain.rules.rules import Rule, RuleOutcome, Streak


def streak_after(previous: Streak | None, holding: int, now: datetime) -> Streak:
    """The streak once a pass at `now` found rule `holding` the first to hold: the same rule
    goes on holding since it began; another begins at `now`. (A pass where no rule holds ends
    every streak.)"""
    if previous is not None and previous.number == holding:
        return previous
    return Streak(holding, now)


_MOVES = (ProposalStatus.APPLIED, ProposalStatus.PENDING, ProposalStatus.REFUSED)
"""A rule's proposals that start a dwell: a change made, one waiting for an admin, and one
refused (a rule refused by the hourly limit tries again once per dwell, not on every run)."""


def _moved_at(proposal: Proposal) -> datetime:
    if proposal.status is ProposalStatus.APPLIED and proposal.decided_at is not None:
        return proposal.decided_at
    return proposal.created_at


def last_rule_move(recent: Sequence[Proposal]) -> Proposal | None:
    """The endpoint's latest proposal that starts a rule's dwell, by when it was applied (made,
    for one not applied), among `recent`: a rule-made one, or any change applied (decision
    0048: every change starts the dwell, whoever made it)."""
    moves = [
        p
        for p in recent
        if p.status is ProposalStatus.APPLIED or (rule_made(p.proposed_by) and p.status in _MOVES)
    ]
    return max(moves, key=_moved_at, default=None)


@dataclass(frozen=True, slots=True)
class HeldBack:
    """Why a rule that holds proposes nothing yet, and until when."""

    outcome: RuleOutcome
    """`pending` (its `for:`) or `dwelling`."""
    until: datetime
    text: str


def held_back(
    rule: Rule,
    streak: Streak,
    last_move: Proposal | None,
    now: datetime,
    default_dwell_seconds: float,
) -> HeldBack | None:
    """Whether rule `rule`, the first to hold as `streak` says, waits before proposing: until
    it has held for its `for:`, then (unless urgent) until `last_move` has stood its dwell.
    Renewing the change that `last_move` made (a lapsed interval, the same rule holding on) is
    no reversal and waits for no dwell."""
    ready = streak.since + timedelta(seconds=rule.for_seconds)
    if ready > now:
        return HeldBack(
            RuleOutcome.PENDING,
            ready,
            f"holds since {streak.since.isoformat()}; fires once it has held for "
            f"{rule.for_seconds:g}s, at {ready.isoformat()}",
        )
    if rule.urgent or last_move is None:
        return None
    renews = (
        last_move.status is ProposalStatus.APPLIED
        and contradiction(rule.then, last_move.draft) is None
    )
    if renews:
        return None
    dwell = default_dwell_seconds if rule.dwell_seconds is None else rule.dwell_seconds
    stood = _moved_at(last_move)
    until = stood + timedelta(seconds=dwell)
    if until <= now:
        return None
    return HeldBack(
        RuleOutcome.DWELLING,
        until,
        f"the last change (proposal {last_move.id}, {last_move.status.value}) "
        f"dwells {dwell:g}s, until {until.isoformat()}",
    )
