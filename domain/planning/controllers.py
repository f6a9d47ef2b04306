"""One controller per endpoint at a time (decision 0048): who holds an endpoint's schedule now,
and whether a change by another must wait.

Three controllers may change a schedule, ranked: an admin (a pause of theirs, a rejection:
`domain.planning.rejections`), a response rule (while its hint is in force: its `ttl`), the planner
(LLM or built-in). A proposal an admin approved stays its proposer's change, as
`domain.access.access.planner_actor` says. A change made by a
higher one is never undone by a lower one while it holds; and every change, whoever made it,
starts a dwell within which no other controller but an admin or an `urgent` rule changes the
endpoint again.
Pure: the caller supplies the endpoint, its latest proposals and `now`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import IntEnum

from cronpilot.domain.access.access import by_person
from cronpilot.domain.model import Endpoint
from cronpilot.domain.planning.planning import Proposal, ProposalKind, ProposalStatus
from cronpilot.domain.rules.rule_firing import rule_made

_RULE_REASON = "proposed by "


class Controller(IntEnum):
    """Who may change an endpoint's schedule, lowest first."""

    PLANNER = 1
    RULE = 2
    ADMIN = 3


@dataclass(frozen=True, slots=True)
class Holder:
    """The controller whose change stands on an endpoint, until when, in words."""

    controller: Controller
    until: datetime | None
    """None: until the admin resumes it."""
    by: str
    """`rule 1 of queue/processor`, `cli:ann@web-1`, `the planner (freshness)`."""


@dataclass(frozen=True, slots=True)
class Held:
    """Why a change must wait, and until when."""

    by: Controller
    until: datetime | None
    text: str


def controller_of(proposal: Proposal) -> Controller:
    """Who made an applied proposal's change: a rule or the planner."""
    return Controller.RULE if rule_made(proposal.proposed_by) else Controller.PLANNER


def _label(proposal: Proposal, controller: Controller) -> str:
    if controller is Controller.RULE:
        # The rule's reason names it first: `proposed by rule 1 of job/endpoint: …`.
        said = proposal.reason.removeprefix(_RULE_REASON)
        return said.split(":", 1)[0]
    return f"the planner ({proposal.proposed_by})"


def _applied_at(proposal: Proposal) -> datetime:
    return proposal.decided_at or proposal.created_at


def _standing_until(proposal: Proposal, endpoint: Endpoint) -> datetime | None:
    """Until when the change `proposal` made is still the endpoint's, or None if it no longer
    is: its interval hint still in force, or its pause."""
    if proposal.kind is ProposalKind.PAUSE:
        pause = endpoint.pause
        if pause is None or pause.until is None:
            return None
        return pause.until
    if proposal.kind is not ProposalKind.INTERVAL or proposal.ttl_seconds is None:
        return None
    hint = endpoint.interval_hint
    until = _applied_at(proposal) + timedelta(seconds=proposal.ttl_seconds)
    if hint is None or hint.interval_seconds != proposal.interval_seconds:
        return None
    return min(until, hint.expires_at)


def holder(endpoint: Endpoint, recent: Sequence[Proposal], now: datetime) -> Holder | None:
    """Who holds the endpoint above the planner now: an admin whose pause stands, else the
    controller of the newest applied change still in force when it is a rule; None when the
    planner may steer."""
    pause = endpoint.pause
    if pause is not None and by_person(pause.by) and (pause.until is None or pause.until > now):
        assert pause.by is not None
        return Holder(Controller.ADMIN, pause.until, pause.by)
    applied = sorted(
        (p for p in recent if p.status is ProposalStatus.APPLIED), key=_applied_at, reverse=True
    )
    for proposal in applied:
        until = _standing_until(proposal, endpoint)
        if until is None or until <= now:
            continue
        controller = controller_of(proposal)
        if controller is Controller.PLANNER:
            return None
        return Holder(controller, until, _label(proposal, controller))
    return None


def last_change(recent: Sequence[Proposal]) -> Proposal | None:
    """The endpoint's newest applied change, whoever made it."""
    applied = [p for p in recent if p.status is ProposalStatus.APPLIED]
    return max(applied, key=_applied_at, default=None)


def held(
    by: Controller,
    endpoint: Endpoint,
    recent: Sequence[Proposal],
    now: datetime,
    dwell_seconds: float,
) -> Held | None:
    """Why a change by `by` must wait on the endpoint now, or None: a higher controller's
    change stands, or the last change, another controller's, has not stood its dwell. An
    admin is never held."""
    if by is Controller.ADMIN:
        return None
    above = holder(endpoint, recent, now)
    if above is not None and above.controller > by:
        shown = "resumed" if above.until is None else above.until.isoformat()
        return Held(above.controller, above.until, f"held by {above.by} until {shown}")
    last = last_change(recent)
    if last is None:
        return None
    until = _applied_at(last) + timedelta(seconds=dwell_seconds)
    maker = controller_of(last)
    if until <= now or maker is by:
        # A controller's own steps are damped by its own means (a rule's dwell, the
        # planner's confidence interval and cool-down): the dwell here keeps the others off.
        return None
    return Held(
        maker,
        until,
        f"held: the last change (proposal {last.id}, by {_label(last, maker)}) dwells "
        f"{dwell_seconds:g}s, until {until.isoformat()}",
    )
