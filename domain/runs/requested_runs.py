"""Runs asked for by hand: one now (`run`), or the past slots of a range that have none
(`backfill`). Both are queued runs that a worker starts once due (`ClaimRepository.claim_due`);
they leave the schedule as it is (`domain.runs.transitions.after_run`).

A backfill finds the baseline's slots in [start, end]: for cron the fire times in the
endpoint's zone, for an interval the grid through the endpoint's last slot (through `start`
when it has none). Slots after `now` are left to the schedule. Its runs are paced: the first is
due at once, each next one `backfill_spacing` later, so a long range never floods an endpoint;
and they only fill the endpoint's spare time: its own schedule goes first (`ahead_of_schedule`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from cronpilot.domain.errors import InvalidRunRequest
from cronpilot.domain.model import Endpoint, EndpointSpec, Run, RunTrigger
from cronpilot.domain.runs.templates import input_fields
from cronpilot.domain.runs.transitions import queued_run
from cronpilot.domain.schedule.schedule import MAX_SECONDS, next_cron_fire, zone

DEFAULT_MAX_SLOTS = 100
"""The most runs one backfill queues unless it is given a higher limit."""
MAX_SLOTS = 10_000
"""The most slots one backfill looks at, whatever its limit: a wider range is refused."""
MIN_SPACING_SECONDS = 1.0
"""A backfill starts at most one run per second of an endpoint, however short its interval."""


def fed_by_upstreams(spec: EndpointSpec) -> bool:
    """Whether the endpoint's request is filled from its upstreams' responses (a DAG
    dependant's template): on its own, a run of it has nothing to fill it with."""
    return any(field.required for field in input_fields(spec))


def manual_run(endpoint: Endpoint, requested_by: str, now: datetime) -> Run:
    """One run due now, its slot the time it was asked for. Raises `InvalidRunRequest` for a
    DAG dependant whose request is filled from its upstreams' responses: on its own there is
    nothing to fill it with."""
    if fed_by_upstreams(endpoint.spec):
        raise InvalidRunRequest(
            endpoint.ref,
            "its request is filled from its upstreams' responses; run an upstream instead",
        )
    return queued_run(
        endpoint, RunTrigger.MANUAL, slot_at=now, due_at=now, requested_by=requested_by, now=now
    )


def retryable(run: Run) -> bool:
    """Whether `run` has ended, so that a retry queues no second call of the same request
    beside it (the console offers Retry only then)."""
    return run.status.finished


def check_retryable(run: Run, ref: str) -> None:
    """Raise `InvalidRunRequest` for a run that is not `retryable`. (A DAG dependant's retry
    runs its node again in its DAG run instead: `dag_clear` decides.)"""
    if not retryable(run):
        raise InvalidRunRequest(
            ref,
            f"run {run.id} is still {run.status.value}; wait for it to end, or cancel it "
            f"(`cronpilot runs cancel {run.id}`) before retrying",
        )


def backfill_slots(
    endpoint: Endpoint, start: datetime, end: datetime, now: datetime
) -> list[datetime]:
    """The baseline's slots in [start, min(end, now)], oldest first, in UTC; a time without an
    offset is read in the endpoint's time zone. Raises `InvalidRunRequest` when `start` is after
    `end`, in the future or more than ten years ago, when the endpoint has no baseline (a DAG
    dependant), or when the range holds more than `MAX_SLOTS` slots."""
    ref, schedule = endpoint.ref, endpoint.spec.schedule
    start, end = _in_utc(ref, start, schedule.timezone), _in_utc(ref, end, schedule.timezone)
    if start > end:
        raise InvalidRunRequest(ref, f"--from {start.isoformat()} is after --to {end.isoformat()}")
    if start > now:
        raise InvalidRunRequest(
            ref, f"--from {start.isoformat()} is in the future; backfill fills past slots"
        )
    if (now - start).total_seconds() > MAX_SECONDS:
        raise InvalidRunRequest(ref, f"--from {start.isoformat()} is more than ten years ago")
    if schedule.after_upstreams:
        raise InvalidRunRequest(
            ref, "it has no schedule of its own (it runs after its upstreams); backfill an upstream"
        )
    last = min(end, now)
    if schedule.cron is not None:
        slots = _cron_slots(schedule.cron, schedule.timezone, start, last)
    else:
        assert schedule.interval_seconds is not None
        period = timedelta(seconds=schedule.interval_seconds)
        slots = _grid_slots(endpoint.last_slot_at or start, period, start, last)
    if len(slots) > MAX_SLOTS:
        raise InvalidRunRequest(
            ref, f"the range holds more than {MAX_SLOTS} slots; backfill a shorter range at a time"
        )
    return slots


def _in_utc(ref: str, moment: datetime, timezone: str) -> datetime:
    local = moment if moment.tzinfo is not None else moment.replace(tzinfo=zone(timezone))
    try:
        return local.astimezone(UTC)
    except OverflowError:
        # Only the calendar's first and last days can leave it when shifted to UTC.
        raise InvalidRunRequest(ref, f"{moment.isoformat()} is out of range") from None


def _cron_slots(expr: str, timezone: str, start: datetime, end: datetime) -> list[datetime]:
    # Cron fires on whole seconds, strictly after the time it is asked from: a second before
    # `start` finds `start` itself when it is a fire time.
    slots: list[datetime] = []
    fire = next_cron_fire(expr, timezone, start - timedelta(seconds=1))
    while fire <= end and len(slots) <= MAX_SLOTS:
        if fire >= start:
            slots.append(fire)
        fire = next_cron_fire(expr, timezone, fire)
    return slots


def _grid_slots(
    anchor: datetime, period: timedelta, start: datetime, end: datetime
) -> list[datetime]:
    # The first grid point at or after `start`: the anchor moved a whole number of periods.
    slot = anchor - ((anchor - start) // period) * period
    slots: list[datetime] = []
    while slot <= end and len(slots) <= MAX_SLOTS:
        slots.append(slot)
        slot += period
    return slots


def backfill_spacing(endpoint: Endpoint) -> timedelta:
    """The time between two backfill runs' starts: the endpoint's min interval or the global
    floor where longer than `MIN_SPACING_SECONDS`."""
    spec = endpoint.spec
    return timedelta(
        seconds=max(MIN_SPACING_SECONDS, spec.floor_seconds, spec.min_interval_seconds or 0.0)
    )


def backfill_runs(
    endpoint: Endpoint,
    missing: Sequence[datetime],
    max_slots: int,
    requested_by: str,
    now: datetime,
) -> list[Run]:
    """Queued runs for the `missing` slots (those without a run), oldest first, paced by
    `backfill_spacing` from `now`. Raises `InvalidRunRequest` when there are more than
    `max_slots` of them."""
    if len(missing) > max_slots:
        raise InvalidRunRequest(
            endpoint.ref,
            f"{len(missing)} slots in range have no run, more than {max_slots}; "
            f"pass --max {len(missing)} to queue them",
        )
    spacing = backfill_spacing(endpoint)
    return [
        queued_run(
            endpoint,
            RunTrigger.BACKFILL,
            slot_at=slot,
            due_at=now + i * spacing,
            requested_by=requested_by,
            now=now,
        )
        for i, slot in enumerate(sorted(missing))
    ]


def ahead_of_schedule(
    trigger: RunTrigger, due_at: datetime, next_run_at: datetime | None, due_by: datetime
) -> bool:
    """Whether a queued run (its trigger, due at `due_at`) may be claimed, by a claim of what is
    due by `due_by`, before its endpoint's own next run (`next_run_at`): always while that is
    not due by then (or never is: paused, a DAG dependant); when it is, only a run asked for
    with `cronpilot run` that was due first. A backfill run never goes before a due slot: its
    paced due times fall behind whenever its calls outlast the spacing, and would otherwise
    keep the schedule from running at all until the backfill is done.

    On plain values, as the SQL store's claim mirrors it (`adapters.sql.claims`)."""
    if next_run_at is None or next_run_at > due_by:
        return True
    return trigger is RunTrigger.MANUAL and due_at < next_run_at
