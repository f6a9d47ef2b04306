"""Calls that outlast their interval: the overlap policy of an endpoint (`overlap: skip |
queue_one | allow`, as Kubernetes' `concurrencyPolicy`).

Under `skip` and `queue_one` an endpoint has one call in flight: its lease is the call's, and
a baseline slot that comes while it runs cannot start. The finish of that call decides what
became of such slots: under `skip` none runs, under `queue_one` the latest runs at once; every
slot not run is recorded as a skipped run (the reason `OVERLAP_REASON`), counted in the
metrics, and the first of a streak raises `overrunning` (ended by `recovered` when a call ends
in time) through `domain.alerts.alerts`.

Under `allow` each call of the schedule holds a lease of its own (`Run.lease_until`,
`runs.transitions.runs_alone`): the claim of a slot moves the endpoint's plan past it and
leaves the endpoint free (`claimed_alone`), so the next slot is claimed when due, whoever still
calls the last. A finish is fenced on its run alone and re-plans the endpoint as stored,
keeping its lease (`runs.settling.settle`); the slot unique key keeps two claims off one slot.
Nothing is skipped, nothing overruns.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from cronpilot.domain.model import (
    Claim,
    Endpoint,
    Overlap,
    Run,
    RunStatus,
    RunTrigger,
    ScheduleSource,
    new_id,
)
from cronpilot.domain.runs.transitions import after_slot, replanned
from cronpilot.domain.schedule.governor import fresh_interval_hint, slots_since
from cronpilot.domain.schedule.pauses import holds

OVERLAP_REASON = "the previous call was still running"
MAX_SKIPPED_RUNS = 100
"""The most skipped runs one finish records: a call that overran more slots than this records
these, and the rest only move the schedule on."""


@dataclass(frozen=True, slots=True)
class Overrun:
    """What the finish of a call decided about the slots that came while it ran."""

    endpoint: Endpoint
    """The endpoint as the finish leaves it, its plan and `overrun_since` moved on."""
    skipped: tuple[Run, ...] = ()


def overrun(ended: Endpoint, run: Run, now: datetime) -> Overrun:
    """The slots that came while `run` (a call of the schedule) ran, settled by the endpoint's
    policy: `ended` is the endpoint as `transitions.after_finish` left it. A call asked for by
    hand, of a DAG run, or under an interval hint (which plans calls of its own) concerns no
    slot of the grid; nor does a paused endpoint's; nor one under `allow`, whose slots were
    claimed while it ran."""
    spec = ended.spec
    if (
        run.trigger is not RunTrigger.SCHEDULE
        or spec.overlap is Overlap.ALLOW
        or spec.schedule.after_upstreams
        or fresh_interval_hint(ended, now) is not None
        or holds(ended.pause, now)
    ):
        return Overrun(ended)
    # Slots due before the call began are the catch-up rule's (`governor.catch_up`), not ours.
    came, latest = slots_since(ended, run.slot_at, run.started_at, now, MAX_SKIPPED_RUNS)
    if latest is None:
        return Overrun(_in_time(ended))
    if spec.overlap is Overlap.SKIP:
        moved = replanned(replace(ended, last_slot_at=latest), now)
    else:
        moved = replace(
            ended,
            next_run_at=now,
            next_slot_at=None if latest == now else latest,
            next_run_source=ScheduleSource.BASELINE,
        )
        came = [slot for slot in came if slot != latest]
    if not came:
        return Overrun(_in_time(moved))
    skipped = tuple(skipped_slot(ended, slot, run.worker_id, now) for slot in came)
    return Overrun(replace(moved, overrun_since=ended.overrun_since or came[0]), skipped)


def _in_time(endpoint: Endpoint) -> Endpoint:
    return endpoint if endpoint.overrun_since is None else replace(endpoint, overrun_since=None)


def skipped_slot(endpoint: Endpoint, slot: datetime, worker_id: str, now: datetime) -> Run:
    """The run recorded for a slot skipped because the previous call was still running."""
    return Run(
        id=new_id(),
        endpoint_id=endpoint.id,
        job_id=endpoint.job_id,
        trace_id=new_id(),
        trigger=RunTrigger.SCHEDULE,
        schedule_source=ScheduleSource.BASELINE,
        status=RunStatus.SKIPPED,
        slot_at=slot,
        started_at=now,
        finished_at=now,
        duration_ms=0.0,
        worker_id=worker_id,
        error_message=f"skipped: {OVERLAP_REASON}",
    )


def claimed_alone(endpoint: Endpoint, slot: datetime, now: datetime) -> Endpoint:
    """An endpoint under `allow` as the claim of its `slot` leaves it: free, and planned past
    the slot (a one-shot hint it fired consumed) as if that slot had ended, its failure streak
    as it was: the finish of the call counts it."""
    return after_slot(endpoint, slot, None, now)


def with_stored_lease(ended: Endpoint, stored: Endpoint) -> Endpoint:
    """`ended` (a finish of a run that held its own lease re-planned it) with the lease of the
    endpoint as `stored`: a run asked for by hand may hold it, and the finish is not its."""
    if (ended.lease_owner, ended.lease_until) == (stored.lease_owner, stored.lease_until):
        return ended
    return replace(ended, lease_owner=stored.lease_owner, lease_until=stored.lease_until)


def given_back(endpoint: Endpoint, claim: Claim) -> Endpoint:
    """An endpoint under `allow` once `claim` gives its slot back unstarted (its claim had
    planned the endpoint past it): planned to call that slot again, for another worker to run
    it on time; as it is when its plan is that early already, or it has none (paused)."""
    call_at = claim.call_at or claim.slot_at
    if endpoint.next_run_at is None or endpoint.next_run_at <= call_at:
        return endpoint
    return replace(
        endpoint,
        next_run_at=call_at,
        next_slot_at=None if claim.call_at is None else claim.slot_at,
        next_run_source=claim.schedule_source,
    )
