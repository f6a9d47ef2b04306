"""An endpoint's schedule over a window of time, as the console draws it: the interval in force
between consecutive slots, every run, and the spans a hint or a pause was in force."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from itertools import pairwise

from cronpilot.domain.access.audit import AuditEntry
from cronpilot.domain.model import Endpoint, Run, RunStatus, RunTrigger, ScheduleSource
from cronpilot.domain.planning.planning import Proposal, ProposalKind, ProposalStatus


@dataclass(frozen=True, slots=True)
class Step:
    """The interval in force from one slot to the next, and why the later slot was then."""

    start: datetime
    end: datetime
    source: ScheduleSource
    planned: bool = False
    """The last step: from the newest slot to the one the scheduler plans next."""

    @property
    def seconds(self) -> float:
        return (self.end - self.start).total_seconds()


class BandKind(StrEnum):
    HINT = "hint"
    ONE_SHOT = "one-shot"
    PAUSE = "pause"


@dataclass(frozen=True, slots=True)
class Band:
    start: datetime
    end: datetime
    kind: BandKind
    label: str


@dataclass(frozen=True, slots=True)
class Timeline:
    start: datetime
    end: datetime
    steps: list[Step]
    runs: list[Run]
    """Oldest first."""
    bands: list[Band]


def build_timeline(
    endpoint: Endpoint,
    runs: Sequence[Run],
    proposals: Sequence[Proposal],
    pauses: Sequence[AuditEntry],
    *,
    start: datetime,
    now: datetime,
) -> Timeline:
    """`runs`, the endpoint's applied `proposals` and its `pause`/`resume` audit entries, in
    any order, drawn from `start` (or its oldest event after `start`) to `now`."""
    shown = sorted(
        (r for r in runs if start <= r.slot_at <= now and r.status is not RunStatus.QUEUED),
        key=lambda r: r.slot_at,
    )
    applied = sorted(
        (p for p in proposals if p.status is ProposalStatus.APPLIED and p.decided_at is not None),
        key=lambda p: p.decided_at or p.created_at,
    )
    bands = _hints(applied, now) + _pauses(endpoint, applied, pauses, shown, now)
    bands = [b for b in bands if b.end >= start]
    earliest = min([r.slot_at for r in shown] + [max(b.start, start) for b in bands], default=now)
    return Timeline(earliest, now, _steps(endpoint, shown), shown, bands)


def _steps(endpoint: Endpoint, runs: list[Run]) -> list[Step]:
    """Between consecutive slots the schedule chose (runs asked for by hand and DAG runs keep
    no interval); then to the next planned slot."""
    slots = [r for r in runs if r.trigger is RunTrigger.SCHEDULE]
    steps = [
        Step(before.slot_at, after.slot_at, after.schedule_source)
        for before, after in pairwise(slots)
        if after.slot_at > before.slot_at
    ]
    following = endpoint.next_slot or endpoint.next_run_at
    if slots and following is not None and following > slots[-1].slot_at:
        steps.append(Step(slots[-1].slot_at, following, endpoint.next_run_source, planned=True))
    return steps


def _hints(applied: list[Proposal], now: datetime) -> list[Band]:
    """An interval hint lasts its TTL or until the next one replaces it; a one-shot hint is a
    moment."""
    bands = []
    intervals = [p for p in applied if p.kind is ProposalKind.INTERVAL]
    for index, proposal in enumerate(intervals):
        assert proposal.decided_at is not None
        ends = [now, proposal.decided_at + timedelta(seconds=proposal.ttl_seconds or 0)]
        ends += [p.decided_at for p in intervals[index + 1 : index + 2] if p.decided_at]
        label = f"interval hint {proposal.interval_seconds:g}s: {proposal.reason}"
        bands.append(Band(proposal.decided_at, min(ends), BandKind.HINT, label))
    bands += [
        Band(p.at, p.at, BandKind.ONE_SHOT, f"one-shot hint: {p.reason}")
        for p in applied
        if p.kind is ProposalKind.NEXT_TIME and p.at is not None and p.at <= now
    ]
    return bands


def _pauses(
    endpoint: Endpoint,
    applied: list[Proposal],
    audited: Sequence[AuditEntry],
    runs: list[Run],
    now: datetime,
) -> list[Band]:
    """A pause (an admin's or the planner's) lasts until the next resume, or the endpoint's next
    run (its `until` passed), or now while the endpoint is still paused."""
    events: list[tuple[datetime, bool, str]] = [
        (e.at, e.action == "pause", f"paused by {e.actor}: {e.detail}") for e in audited
    ]
    events += [
        (p.decided_at, p.kind is ProposalKind.PAUSE, f"paused by the planner: {p.reason}")
        for p in applied
        if p.decided_at is not None and p.kind in (ProposalKind.PAUSE, ProposalKind.RESUME)
    ]
    events.sort(key=lambda e: e[0])
    bands = []
    for index, (at, pausing, label) in enumerate(events):
        if not pausing:
            continue
        resumed = next((when for when, p, _ in events[index + 1 :] if not p), None)
        ran = next((r.slot_at for r in runs if r.slot_at > at), None)
        ends = [when for when in (resumed, ran) if when is not None]
        still = endpoint.pause is not None and resumed is None and ran is None
        end = now if still or not ends else min(ends)
        bands.append(Band(at, end, BandKind.PAUSE, label))
    return bands
