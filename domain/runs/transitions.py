"""Pure state changes of an endpoint. Every store applies these, so memory, SQLite and
PostgreSQL agree on what a finish, a pause or a re-apply does to the schedule."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from cronpilot.domain.alerts.alerts import pause_after_failure
from cronpilot.domain.evolve import evolved
from cronpilot.domain.model import (
    Claim,
    Endpoint,
    EndpointSpec,
    ErrorKind,
    IntervalHint,
    OneShotHint,
    Overlap,
    Pause,
    Response,
    Run,
    RunStatus,
    RunTrigger,
    ScheduleSource,
    StoredClaim,
    new_id,
)
from cronpilot.domain.runs.watch import with_lateness
from cronpilot.domain.schedule.governor import LATE_GRACE, catch_up, plan_next_run
from cronpilot.domain.schedule.pauses import holds, job_holds, job_pause_ended
from cronpilot.domain.schedule.steering import held_back, steered


def replanned(endpoint: Endpoint, now: datetime) -> Endpoint:
    """The endpoint with stale hints, an expired pause and a passed `Retry-After` dropped and its
    next run re-planned."""
    interval = endpoint.interval_hint
    oneshot = endpoint.oneshot_hint
    pause = endpoint.pause
    retry_after = endpoint.retry_after_at
    kept = (
        interval if interval is not None and interval.expires_at > now else None,
        oneshot if oneshot is not None and oneshot.expires_at > now else None,
        pause if pause is not None and (pause.until is None or pause.until > now) else None,
        retry_after if retry_after is not None and retry_after > now else None,
    )
    fresh = endpoint
    # Mostly nothing is stale, and copying the endpoint costs more than these checks.
    if kept != (interval, oneshot, pause, retry_after):
        fresh = evolved(
            endpoint,
            interval_hint=kept[0],
            oneshot_hint=kept[1],
            pause=kept[2],
            retry_after_at=kept[3],
        )
    planned = plan_next_run(fresh, now)
    return evolved(
        fresh, next_run_at=planned.at, next_slot_at=planned.slot, next_run_source=planned.source
    )


def resumed(endpoint: Endpoint, now: datetime) -> Endpoint:
    """The endpoint re-planned as a pause ending at `now` leaves it: slots that passed while the
    pause held are skipped, neither caught up nor run late; when its plan would run one of them,
    it is planned afresh from `now`, as the end of a pause until a time is (`governor`): an
    interval's grid starts again at `now`, a cron waits for its next fire."""
    planned = replanned(endpoint, now)
    slot = planned.next_slot
    if slot is None or slot >= now - LATE_GRACE:
        return planned
    afresh = plan_next_run(replace(planned, last_slot_at=None), now)
    return replace(
        planned, next_run_at=afresh.at, next_slot_at=afresh.slot, next_run_source=afresh.source
    )


def job_resumed(endpoint: Endpoint, now: datetime) -> Endpoint:
    """An endpoint of a job resumed at `now`: `resumed` when the job's pause held it, else as
    it is (the same object)."""
    if not job_holds(endpoint, now):
        return endpoint
    return resumed(replace(endpoint, job_pause=None), now)


def caught_up(endpoint: Endpoint, now: datetime) -> Endpoint | None:
    """The endpoint moved off a missed baseline slot, at the claim, onto the slot its catch-up
    rule runs instead or waits for (`governor.catch_up`); None when the planned slot runs. A
    slot that fell while its job was paused until a time now past is not caught up: the
    endpoint is planned from the pause's end (`resumed`)."""
    ended = job_pause_ended(endpoint, now)
    slot = endpoint.next_slot
    if ended is not None and slot is not None and slot < ended - LATE_GRACE:
        moved = resumed(endpoint, ended)
        return None if moved.next_slot == slot else moved
    planned = catch_up(endpoint, now)
    if planned is None:
        return None
    return replace(
        endpoint,
        next_run_at=planned.at,
        next_slot_at=planned.slot,
        next_run_source=planned.source,
    )


def after_slot(
    endpoint: Endpoint, slot_at: datetime, succeeded: bool | None, now: datetime
) -> Endpoint:
    """The endpoint once the run of `slot_at` has ended and its lease is released.

    `succeeded=None` (abandoned) leaves the failure streak as it was. A one-shot hint whose time
    has come is consumed by the slot that fired it. A failure that brings the streak to the
    spec's `pause_after` pauses the endpoint (`domain.alerts.alerts.pause_after_failure`).
    """
    failures = endpoint.failure_count
    if succeeded is not None:
        failures = 0 if succeeded else failures + 1
    oneshot = endpoint.oneshot_hint
    if oneshot is not None and oneshot.at <= slot_at:
        oneshot = None
    last = endpoint.last_slot_at
    pause = pause_after_failure(endpoint, failures, failed=succeeded is False, now=now)
    return replanned(
        evolved(
            endpoint,
            pause=pause,
            failure_count=failures,
            last_slot_at=slot_at if last is None or slot_at > last else last,
            oneshot_hint=oneshot,
            lease_owner=None,
            lease_until=None,
        ),
        now,
    )


def after_run(endpoint: Endpoint, run: Run, succeeded: bool | None, now: datetime) -> Endpoint:
    """The endpoint once `run` has ended (`succeeded=None`: abandoned) and its lease is
    released. A run of the schedule or of a DAG run moves the schedule on (`after_slot`). A
    queued run (manual, backfill) was asked for by hand: it only frees the lease, so it is no
    missed slot, consumes no hint and does not count towards backoff."""
    if run.trigger.requested:
        return evolved(endpoint, lease_owner=None, lease_until=None)
    return after_slot(endpoint, run.slot_at, succeeded, now)


def after_reap(endpoint: Endpoint, abandoned: Sequence[Run], now: datetime) -> Endpoint:
    """The endpoint freed once the runs of its expired lease are `abandoned`: the schedule moves
    past the latest slot of its own among them (queued runs aside, as in `after_run`); with no
    run at all, it is re-planned."""
    freed = replace(endpoint, lease_owner=None, lease_until=None)
    slots = [run.slot_at for run in abandoned if not run.trigger.requested]
    if slots:
        return after_slot(freed, max(slots), None, now)
    return freed if abandoned else replanned(freed, now)


def queued_run(
    endpoint: Endpoint,
    trigger: RunTrigger,
    *,
    slot_at: datetime,
    due_at: datetime,
    requested_by: str,
    now: datetime,
) -> Run:
    """A run asked for by hand, waiting for a worker (`claim_due`) from `due_at`. Until then its
    `started_at` is when it was asked for, and it has no worker."""
    return Run(
        id=new_id(),
        endpoint_id=endpoint.id,
        job_id=endpoint.job_id,
        trace_id=new_id(),
        trigger=trigger,
        # It fills a baseline slot (backfill) or stands beside the schedule (manual): no hint
        # nor backoff chose it.
        schedule_source=ScheduleSource.BASELINE,
        status=RunStatus.QUEUED,
        slot_at=slot_at,
        started_at=now,
        worker_id="",
        due_at=due_at,
        requested_by=requested_by,
    )


def after_call(
    endpoint: Endpoint, slot_at: datetime, response: Response, now: datetime
) -> Endpoint:
    """`after_slot` for a slot whose call ended with `response`: what the answer asked of the
    schedule (`domain.schedule.steering`) is taken first, so the re-planning heeds it."""
    return after_slot(steered(endpoint, response, now), slot_at, response.ok, now)


def after_finish(endpoint: Endpoint, run: Run, response: Response, now: datetime) -> Endpoint:
    """The endpoint once `run`'s call ended with `response`. A quiet period's skipped run
    (`domain.schedule.quiet`) moves the schedule on and changes nothing else. A queued run (manual,
    backfill) leaves the schedule alone (`after_run`) but for a `Retry-After` in its answer, which
    holds the schedule back as well (`domain.schedule.steering.held_back`): then it is
    re-planned."""
    if run.trigger.requested:
        held = held_back(endpoint, response, now)
        ended = after_run(held, run, response.ok, now)
        return ended if held is endpoint else replanned(ended, now)
    if run.schedule_source is ScheduleSource.QUIET:
        # Not called: neither a success nor a failure, never late.
        return after_slot(endpoint, run.slot_at, None, now)
    return after_call(with_lateness(endpoint, run), run.slot_at, response, now)


def with_spec(endpoint: Endpoint, spec: EndpointSpec, now: datetime) -> Endpoint:
    """A re-applied declaration keeps runtime state (hints, pause, streak) and re-plans."""
    return replanned(replace(endpoint, spec=spec), now)


def with_pause(endpoint: Endpoint, pause: Pause | None, now: datetime) -> Endpoint:
    """The endpoint paused (or resumed, with None) and re-planned: a pause lifted while it held
    leaves the endpoint `resumed`."""
    changed = replace(endpoint, pause=pause)
    if pause is None and holds(endpoint.pause, now):
        return resumed(changed, now)
    return replanned(changed, now)


def with_hints(
    endpoint: Endpoint,
    interval_hint: IntervalHint | None,
    oneshot_hint: OneShotHint | None,
    now: datetime,
) -> Endpoint:
    return replanned(replace(endpoint, interval_hint=interval_hint, oneshot_hint=oneshot_hint), now)


def claim_of(
    endpoint: Endpoint,
    run_id: str,
    trace_id: str,
    lease_until: datetime,
    stored: StoredClaim | None = None,
) -> Claim:
    """The claim of a due endpoint's next slot: recorded under its grid slot, called when
    planned (jitter, or a missed slot caught up late, may have moved the call off the slot);
    `stored`: its rows as the claim left them, when the store knows."""
    slot = endpoint.next_slot
    assert slot is not None, "only endpoints with a next run are due"
    return Claim(
        endpoint=endpoint,
        run_id=run_id,
        slot_at=slot,
        trace_id=trace_id,
        lease_until=lease_until,
        schedule_source=endpoint.next_run_source,
        call_at=None if endpoint.next_slot_at is None else endpoint.next_run_at,
        stored=stored,
    )


def runs_alone(claim: Claim) -> bool:
    """Whether `claim`'s run holds a lease of its own and leaves its endpoint free
    (`domain.overlap`): a slot of the schedule of an endpoint under `overlap: allow`. A run
    asked for by hand leases its endpoint as under any policy."""
    return (
        claim.queued is None and claim.dag is None and claim.endpoint.spec.overlap is Overlap.ALLOW
    )


def started_run(claim: Claim, worker_id: str, now: datetime) -> Run:
    """The `running` run inserted when a slot is claimed, or a claimed queued run turned
    `running`; it holds the claim's lease itself when it `runs_alone`."""
    if claim.queued is not None:
        return started_queued(claim.queued, worker_id, now)
    return Run(
        id=claim.run_id,
        endpoint_id=claim.endpoint.id,
        job_id=claim.endpoint.job_id,
        trace_id=claim.trace_id,
        parent_trace_id=claim.dag.parent_trace_id if claim.dag is not None else None,
        dag_run_id=claim.dag.dag_run_id if claim.dag is not None else None,
        trigger=RunTrigger.SCHEDULE if claim.dag is None else RunTrigger.DAG,
        schedule_source=claim.schedule_source,
        status=RunStatus.RUNNING,
        slot_at=claim.slot_at,
        started_at=now,
        worker_id=worker_id,
        attempt=claim.attempt,
        lease_until=claim.lease_until if runs_alone(claim) else None,
    )


def queued_claim(endpoint: Endpoint, queued: Run, lease_until: datetime) -> Claim:
    """The claim of a queued run, its endpoint leased until `lease_until`."""
    return Claim(
        endpoint=endpoint,
        run_id=queued.id,
        slot_at=queued.slot_at,
        trace_id=queued.trace_id,
        lease_until=lease_until,
        schedule_source=queued.schedule_source,
        call_at=queued.due_at,
        queued=queued,
    )


def started_queued(queued: Run, worker_id: str, now: datetime) -> Run:
    """A queued run once a worker has claimed it."""
    return replace(queued, status=RunStatus.RUNNING, started_at=now, worker_id=worker_id)


def finished_run(running: Run, response: Response, now: datetime) -> Run:
    """The run completed with what the dispatcher observed."""
    started = response.started_at or running.started_at
    finished = response.finished_at or now
    return evolved(
        running,
        status=_status(running, response),
        started_at=started,
        finished_at=finished,
        duration_ms=(finished - started).total_seconds() * 1000,
        status_code=response.status_code,
        body=response.body,
        body_absence=response.body_absence,
        size_bytes=response.size_bytes,
        body_hash=response.body_hash,
        error_kind=response.error_kind,
        error_message=response.error_message,
        attempt=len(response.attempts) or running.attempt,
        attempts=response.attempts,
        request=response.request,
        not_modified=response.not_modified,
    )


def _status(running: Run, response: Response) -> RunStatus:
    if running.schedule_source is ScheduleSource.QUIET:
        return RunStatus.SKIPPED
    return RunStatus.SUCCESS if response.ok else RunStatus.FAILED


def abandoned_run(running: Run, kind: ErrorKind, reason: str, now: datetime) -> Run:
    return replace(
        running,
        status=RunStatus.ABANDONED,
        finished_at=now,
        duration_ms=(now - running.started_at).total_seconds() * 1000,
        error_kind=kind,
        error_message=reason,
    )
