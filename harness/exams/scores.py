"""How a planner exam is scored (`cronpilot planner eval`, decision 0031).

An exam tells a story on a fake clock and says, for each second and each endpoint it grades,
what the right call was then (a `Want`): call more often, call less often, not more often, or
anything. The planner is scored on the proposals it made, whatever became of them:

- **direction**: a proposal whose direction the story allowed at some second of the `lag`
  before it was made (the planner sees answers late, by an interval or so) is right; each
  stretch of the story that *needs* a direction counts too, as met when the planner proposed
  that way during the stretch (plus the lag), or a change of its still in force when the
  stretch began went that way. Direction is the right moves and met needs over the moves and
  the needs; a proposal that changes nothing (the interval already in force, renewed) is not
  judged.
- **clamps**: the share of proposals within the bounds of their kind (`bounds_refusal`).
- **oscillations**: reversals (tighten then relax, or back) the story gave no reason for: what
  it wanted stayed the same from the first of the two to the second, and allowed the first
  (turning away from a move it did not allow, made late, is a correction, not a flip-flop).

The score is direction times clamps, divided by one plus the oscillations.

Pure: the caller supplies what was proposed, when, in which direction, and whether within
bounds, and the story's wants second by second.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import astuple, dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from itertools import pairwise

from cronpilot.domain.planning.planning import Proposal, ProposalKind, ProposalStatus

MIN_NEED_SECONDS = 3
"""A stretch that needs a direction must last this long to be scored: a blip of a second is
no fault to miss."""


class Direction(StrEnum):
    TIGHTEN = "tighten"
    """Call more often or sooner: a shorter interval, a run now, a next time, a resume."""
    RELAX = "relax"
    """Call less often: a longer interval, a pause."""
    NEUTRAL = "neutral"
    """No change: the interval already in force."""


_ALL = frozenset(Direction)


@dataclass(frozen=True, slots=True)
class Want:
    """What a story wants of the planner at one second."""

    name: str
    allowed: frozenset[Direction]
    needed: Direction | None = None
    """The direction the planner must take while the want lasts, if any."""


TIGHTEN = Want("tighten", frozenset({Direction.TIGHTEN}), Direction.TIGHTEN)
RELAX = Want("relax", frozenset({Direction.RELAX}), Direction.RELAX)
CALM = Want("not tighter", frozenset({Direction.RELAX, Direction.NEUTRAL}))
"""Anything but calling more often: a failing endpoint is left to the backoff."""
EITHER = Want("anything", _ALL)

WantAt = Callable[[int], Want]
"""The story's want at each second from its start."""


def directions(proposals: Sequence[Proposal], baseline_seconds: float) -> list[Direction]:
    """Which way each of an endpoint's proposals (oldest first) moves its calls: a run now, a
    next time or a resume tightens, a pause relaxes; an interval, or a return to the baseline,
    from the interval in force when it was made (the last applied interval within its ttl,
    else the baseline) — relaxing from 5 s back to a 10 s baseline is relaxing."""
    found: list[Direction] = []
    interval: float = baseline_seconds
    lapses: datetime | None = None
    for proposal in proposals:
        if lapses is not None and proposal.created_at >= lapses:
            interval, lapses = baseline_seconds, None
        found.append(_direction(proposal, interval, baseline_seconds))
        if proposal.status is not ProposalStatus.APPLIED:
            continue
        if proposal.kind is ProposalKind.BASELINE:
            interval, lapses = baseline_seconds, None
        elif proposal.kind is ProposalKind.INTERVAL and proposal.interval_seconds is not None:
            ttl = timedelta(seconds=proposal.ttl_seconds or 0)
            interval, lapses = proposal.interval_seconds, proposal.created_at + ttl
    return found


def _direction(proposal: Proposal, in_force: float, baseline_seconds: float) -> Direction:
    kind = proposal.kind
    if kind in (ProposalKind.RUN_NOW, ProposalKind.NEXT_TIME, ProposalKind.RESUME):
        return Direction.TIGHTEN
    if kind is ProposalKind.PAUSE:
        return Direction.RELAX
    target = baseline_seconds if kind is ProposalKind.BASELINE else proposal.interval_seconds
    if target is None or target == in_force:
        return Direction.NEUTRAL
    return Direction.TIGHTEN if target < in_force else Direction.RELAX


@dataclass(frozen=True, slots=True)
class Proposed:
    """One proposal as the exam scores it."""

    second: int
    """When it was made, in whole seconds from the start of the story."""
    direction: Direction
    within_bounds: bool
    status: ProposalStatus
    until: int | None = None
    """The last second its change stood (`standings`); None for one that took no stance."""


def second_of(moment: datetime, started: datetime) -> int:
    return int((moment - started).total_seconds())


def standings(proposals: Sequence[Proposal], started: datetime) -> list[int | None]:
    """The last second each of an endpoint's proposals (oldest first) stood as a change in
    force: an applied interval until its ttl lapsed, an applied pause until it ended, each at
    most until the next applied change of the same thing (an interval or a return to the
    baseline; a pause or a resume). A run now, a next time, a resume or a return to the
    baseline takes no stance: None, as for a proposal never applied."""
    found: list[int | None] = []
    for index, proposal in enumerate(proposals):
        end = _own_end(proposal)
        if end is None:
            found.append(None)
            continue
        same = _INTERVAL_CHANGES if proposal.kind is ProposalKind.INTERVAL else _PAUSE_CHANGES
        superseded = [
            later.created_at
            for later in proposals[index + 1 :]
            if later.status is ProposalStatus.APPLIED and later.kind in same
        ]
        if superseded:
            end = min(end, superseded[0])
        # In force while `end > now` (as hints and pauses are): the last whole second before.
        found.append(math.ceil((end - started).total_seconds()) - 1)
    return found


_INTERVAL_CHANGES = (ProposalKind.INTERVAL, ProposalKind.BASELINE)
_PAUSE_CHANGES = (ProposalKind.PAUSE, ProposalKind.RESUME)


def _own_end(proposal: Proposal) -> datetime | None:
    if proposal.status is not ProposalStatus.APPLIED:
        return None
    if proposal.kind is ProposalKind.INTERVAL and proposal.ttl_seconds is not None:
        return proposal.created_at + timedelta(seconds=proposal.ttl_seconds)
    if proposal.kind is ProposalKind.PAUSE:
        return proposal.at
    return None


@dataclass(frozen=True, slots=True)
class Score:
    proposals: int = 0
    right: int = 0
    """Moves (proposals that change something) in a direction the story allowed."""
    needs: int = 0
    met: int = 0
    within_bounds: int = 0
    oscillations: int = 0
    refused: int = 0
    """Proposals the guardrails refused: scored like the others (the planner proposed them),
    and counted to show how often the guardrails stood between it and the schedule."""
    judged: int = 0
    """Proposals judged for direction: the moves; one that changes nothing is not judged."""

    def __add__(self, other: Score) -> Score:
        return Score(*(a + b for a, b in zip(astuple(self), astuple(other), strict=True)))

    @property
    def direction(self) -> float:
        judged = self.judged + self.needs
        return (self.right + self.met) / judged if judged else 1.0

    @property
    def clamps(self) -> float:
        return self.within_bounds / self.proposals if self.proposals else 1.0

    @property
    def value(self) -> float:
        return self.direction * self.clamps / (1 + self.oscillations)


def score(proposed: Sequence[Proposed], want: WantAt, seconds: int, lag: int) -> Score:
    """The score of one endpoint's proposals (oldest first) over a story of `seconds`."""
    wants = [want(second) for second in range(seconds)]
    needs = _stretches(wants)
    moves = [p for p in proposed if p.direction is not Direction.NEUTRAL]
    return Score(
        proposals=len(proposed),
        right=sum(_allowed(p, wants, lag) for p in moves),
        needs=len(needs),
        met=sum(_met(need, proposed, lag) for need in needs),
        within_bounds=sum(p.within_bounds for p in proposed),
        oscillations=_oscillations(proposed, wants),
        refused=sum(p.status is ProposalStatus.REFUSED for p in proposed),
        judged=len(moves),
    )


@dataclass(frozen=True, slots=True)
class _Need:
    direction: Direction
    first: int
    last: int
    """The stretch's first and last seconds."""


def _stretches(wants: Sequence[Want]) -> list[_Need]:
    """The stretches of `MIN_NEED_SECONDS` or more that need a direction."""
    found: list[_Need] = []
    start = 0
    for second in range(1, len(wants) + 1):
        if second < len(wants) and wants[second].needed == wants[start].needed:
            continue
        needed = wants[start].needed
        if needed is not None and second - start >= MIN_NEED_SECONDS:
            found.append(_Need(needed, start, second - 1))
        start = second
    return found


def _allowed(proposal: Proposed, wants: Sequence[Want], lag: int) -> bool:
    first = max(0, proposal.second - lag)
    last = min(proposal.second, len(wants) - 1)
    return any(proposal.direction in wants[s].allowed for s in range(first, last + 1))


def _met(need: _Need, proposed: Sequence[Proposed], lag: int) -> bool:
    """Whether the planner went the needed way during the stretch (give or take the lag), or
    a change of its that still stood when the stretch began went that way."""
    standing = [
        p
        for p in proposed
        if p.second < need.first and p.until is not None and p.until >= need.first
    ]
    during = [p for p in proposed if need.first <= p.second <= need.last + lag]
    stood = bool(standing) and standing[-1].direction is need.direction
    return stood or any(p.direction is need.direction for p in during)


def _oscillations(proposed: Sequence[Proposed], wants: Sequence[Want]) -> int:
    if not wants:
        return 0
    moves = [p for p in proposed if p.direction is not Direction.NEUTRAL]
    count = 0
    for earlier, later in pairwise(moves):
        if earlier.direction is later.direction:
            continue
        between = wants[min(earlier.second, len(wants) - 1) : later.second + 1]
        unchanged = all(want == between[0] for want in between)
        if unchanged and earlier.direction in between[0].allowed:
            count += 1
    return count
