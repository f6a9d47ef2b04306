"""What a claim takes and what the reaper ends: the rules every store applies.

The memory store calls these functions as they are. The SQL store selects the same rows in SQL,
because on PostgreSQL a claim is one statement per batch (`FOR UPDATE SKIP LOCKED`) and a rule
applied after the rows came back would take a second round trip, or lock rows it then gives
back. Each SQL mirror names its function here, and `tests/contract/test_rules_contract.py`
proves that both choose the same rows over generated states (decision 0014).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from cronpilot.domain.evolve import evolved
from cronpilot.domain.model import Endpoint, Run, RunStatus
from cronpilot.domain.runs.requested_runs import ahead_of_schedule
from cronpilot.domain.schedule.limits import LimitState, after_hold
from cronpilot.domain.schedule.pauses import held_until, job_holds


def is_due(endpoint: Endpoint, due_by: datetime) -> bool:
    """Due by `due_by` and not leased by a live worker (an expired lease is the reaper's to
    clear). A paused endpoint, or a DAG dependant, has no `next_run_at`: never due. A hint, a
    `Retry-After` or a backoff has already moved `next_run_at` (`governor.plan_next_run`)."""
    return (
        endpoint.next_run_at is not None
        and endpoint.next_run_at <= due_by
        and endpoint.lease_owner is None
    )


def hint_active(endpoint: Endpoint, now: datetime) -> bool:
    """Whether an interval or one-shot hint of the endpoint has not expired at `now`."""
    hints = (endpoint.interval_hint, endpoint.oneshot_hint)
    return any(hint is not None and hint.expires_at > now for hint in hints)


def may_start(queued: Run, endpoint: Endpoint, due_by: datetime) -> bool:
    """Whether a claim of what is due by `due_by` may start the run `queued` of `endpoint`: it
    is still queued, due, its endpoint free, and it may go before the endpoint's own schedule
    (`requested_runs.ahead_of_schedule`)."""
    return (
        queued.status is RunStatus.QUEUED
        and queued.due_at is not None
        and queued.due_at <= due_by
        and endpoint.lease_owner is None
        and ahead_of_schedule(queued.trigger, queued.due_at, endpoint.next_run_at, due_by)
    )


@dataclass(frozen=True, slots=True)
class ClaimPick:
    """What one claim takes, in order: queued runs first (asked for by hand, and few), at most
    one per endpoint, then the due slots of the endpoints left free."""

    queued: list[Run]
    slots: list[Endpoint]


def pick_claims(
    endpoints: Mapping[str, Endpoint],
    waiting: Iterable[Run],
    due_by: datetime,
    limit: int,
    now: datetime,
) -> ClaimPick:
    """The claim at `now` of at most `limit` items due by `due_by`, from `endpoints` (by id) and
    the queued runs `waiting`: the earliest due (then earliest slot) startable run of each
    endpoint (`may_start`), earliest first; then the endpoints still free that are due
    (`is_due`), earliest `next_run_at` first. An endpoint whose queued run is picked is leased
    by it, so its slot waits for the next claim. Nothing of an endpoint whose job's pause holds
    at `now` is picked (`pauses.job_holds`).

    The SQL claim (`adapters.sql.claims`) selects the same rows; what it does with a picked slot
    (catch-up, a slot already run) follows `domain.runs.transitions` in both stores."""
    free = {id_: e for id_, e in endpoints.items() if not job_holds(e, now)}
    startable = sorted(
        (
            run
            for run in waiting
            if run.endpoint_id in free and may_start(run, free[run.endpoint_id], due_by)
        ),
        key=queue_order,
    )
    queued = first_of_each(startable, limit)
    taken = {run.endpoint_id for run in queued}
    due = sorted(
        (e for e in free.values() if e.id not in taken and is_due(e, due_by)),
        key=_next_run,
    )
    return ClaimPick(queued, due[: max(limit - len(queued), 0)])


def queue_order(queued: Run) -> tuple[datetime | None, datetime]:
    """The order in which queued runs start: earliest due, then earliest slot."""
    return queued.due_at, queued.slot_at


def first_of_each(startable: Iterable[Run], limit: int) -> list[Run]:
    """Of startable runs in `queue_order`, the first of each endpoint, at most `limit`: one
    claim starts one run per endpoint, as an endpoint has one lease."""
    first: dict[str, Run] = {}
    for run in startable:
        if len(first) < limit and run.endpoint_id not in first:
            first[run.endpoint_id] = run
    return list(first.values())


def _next_run(endpoint: Endpoint) -> datetime:
    assert endpoint.next_run_at is not None, "only endpoints with a next run are due"
    return endpoint.next_run_at


def leased(endpoint: Endpoint, worker_id: str, until: datetime) -> Endpoint:
    """The endpoint as a claim leaves it: held by `worker_id` until `until`."""
    return evolved(endpoint, lease_owner=worker_id, lease_until=until)


def lease_expired(endpoint: Endpoint, now: datetime) -> bool:
    """Whether the reaper ends the endpoint's lease at `now`: held, and held until before now."""
    return (
        endpoint.lease_owner is not None
        and endpoint.lease_until is not None
        and endpoint.lease_until < now
    )


def run_lease_expired(run: Run, now: datetime) -> bool:
    """Whether the reaper abandons at `now` a run that holds its own lease
    (`runs.transitions.runs_alone`): still running, and held until before now."""
    return run.status is RunStatus.RUNNING and run.lease_until is not None and run.lease_until < now


def next_due(
    endpoints: Iterable[Endpoint],
    waiting: Iterable[Run],
    limits: Mapping[str, LimitState] | None = None,
) -> datetime | None:
    """When a sleeping scheduler should look again: the earliest `next_run_at` of a free
    endpoint, or `due_at` of a queued run of one, each no earlier than its job's pause ends
    (`pauses.held_until`; None: nothing planned) nor its key's hold may open
    (`limits.after_hold`). It ignores `ahead_of_schedule`: waking early for a run that then
    waits costs one empty claim."""
    states = limits or {}
    free = {e.id: e for e in endpoints if e.lease_owner is None}
    times = [
        held_until(e, after_hold(e, e.next_run_at, states))
        for e in free.values()
        if e.next_run_at is not None
    ]
    times += [
        held_until(free[run.endpoint_id], after_hold(free[run.endpoint_id], run.due_at, states))
        for run in waiting
        if run.status is RunStatus.QUEUED and run.due_at is not None and run.endpoint_id in free
    ]
    return min((time for time in times if time is not None), default=None)
