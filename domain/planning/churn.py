"""No pile-ups, no oscillation (decision 0029): a proposal that would change nothing (it is in
force, or the same one waits for review) is not made again, and an endpoint whose interval
proposals alternated direction is held at its interval for a cool-down.

Pure: the caller supplies the endpoint, its pending proposals and its recent ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from itertools import pairwise

from cronpilot.domain.model import Endpoint
from cronpilot.domain.planning.planning import Proposal, ProposalDraft, ProposalKind, ProposalStatus

COOL_DOWN = timedelta(hours=1)
"""How long an endpoint whose interval proposals alternated (tighten/relax/tighten) is held
at its interval, from its latest interval proposal: as long as the rate window, whose limit
the alternation would otherwise reach."""
ALTERNATIONS = 3
"""Directions in a row, each the opposite of the one before, that make an oscillation."""


def in_force(draft: ProposalDraft, endpoint: Endpoint, now: datetime) -> bool:
    """Whether applying `draft` would leave the endpoint's schedule as it is."""
    kind = draft.kind
    if kind is ProposalKind.INTERVAL:
        hint = endpoint.interval_hint
        return (
            hint is not None
            and hint.expires_at > now
            and hint.interval_seconds == (draft.interval_seconds)
        )
    if kind is ProposalKind.NEXT_TIME:
        shot = endpoint.oneshot_hint
        return shot is not None and shot.expires_at > now and shot.at == draft.at
    if kind is ProposalKind.PAUSE:
        return endpoint.pause is not None and endpoint.pause.until == draft.at
    if kind is ProposalKind.BASELINE:
        return endpoint.interval_hint is None and endpoint.oneshot_hint is None
    return False


def _same(draft: ProposalDraft, pending: Proposal) -> bool:
    # The reason is words: two proposals that change the same thing are the same proposal.
    mine, theirs = draft, pending.draft
    return (mine.kind, mine.interval_seconds, mine.at, mine.ttl_seconds) == (
        theirs.kind,
        theirs.interval_seconds,
        theirs.at,
        theirs.ttl_seconds,
    ) or (mine.kind is theirs.kind and mine.kind in (ProposalKind.RUN_NOW, ProposalKind.RESUME))


def unneeded(
    draft: ProposalDraft, endpoint: Endpoint, pending: Sequence[Proposal], now: datetime
) -> str | None:
    """Why `draft` is not worth making, in words the session records, or None."""
    if in_force(draft, endpoint, now):
        return "already in force"
    for proposal in pending:
        if proposal.status is ProposalStatus.PENDING and _same(draft, proposal):
            return f"already pending as proposal {proposal.id}"
    return None


def cooling(draft: ProposalDraft, recent: Sequence[Proposal], now: datetime) -> datetime | None:
    """Until when the endpoint is held at its interval, when `draft` would continue an
    alternation of its interval proposals (`recent`: newest first; those applied or pending
    count), or None."""
    if draft.kind is not ProposalKind.INTERVAL or draft.interval_seconds is None:
        return None
    made = [
        p
        for p in recent
        if p.kind is ProposalKind.INTERVAL
        and p.interval_seconds is not None
        and p.status in (ProposalStatus.APPLIED, ProposalStatus.PENDING)
    ][:ALTERNATIONS]
    if len(made) < ALTERNATIONS or now - made[0].created_at >= COOL_DOWN:
        return None
    values = [p.interval_seconds or 0.0 for p in reversed(made)] + [draft.interval_seconds]
    steps = [b - a for a, b in pairwise(values)]
    alternate = all(s != 0 for s in steps) and all((a > 0) != (b > 0) for a, b in pairwise(steps))
    return made[0].created_at + COOL_DOWN if alternate else None
