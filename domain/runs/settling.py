"""The fenced finish of a batch, decided once for every store (`ClaimRepository.finish_many`).

A finish holds when the claim's worker still owns its endpoint's lease and the claim's run is
still `running` (the fence; a run that holds its own lease, under `overlap: allow`, by being
still `running` alone, its id being its claim's); it then settles: the run completed with its
response, the endpoint re-planned after it, and the notifications they raise. A store reads
what the fence needs, hands it to `settle_batch`, and persists what comes back; the DAG's part
(a run with dependants) is the store's to add in the same transaction (`domain.graph.dag`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from cronpilot.domain.alerts.alerts import Notification, run_notifications
from cronpilot.domain.model import Endpoint, Finish, Response, Run, RunStatus
from cronpilot.domain.runs.transitions import (
    after_finish,
    finished_run,
    runs_alone,
    started_run,
)
from cronpilot.domain.schedule.overlap import overrun, with_stored_lease


@dataclass(frozen=True, slots=True)
class Settled:
    """What one finish writes: the run completed, its endpoint after it, the outbox rows."""

    run: Run
    endpoint: Endpoint
    raised: tuple[Notification, ...]
    skipped: tuple[Run, ...] = ()
    """The slots that came while the call ran and were not run (`domain.schedule.overlap`)."""


def settle(endpoint: Endpoint, running: Run, response: Response, now: datetime) -> Settled:
    """The finish of `running` with `response`, its endpoint being `endpoint` as stored."""
    assert running.status is RunStatus.RUNNING, "only a running run finishes"
    run = finished_run(running, response, now)
    settled = overrun(after_finish(endpoint, running, response, now), running, now)
    ended = settled.endpoint
    if running.lease_until is not None:
        ended = with_stored_lease(ended, endpoint)
    raised = tuple(run_notifications(endpoint, ended, run, now))
    return Settled(run, ended, raised, settled.skipped)


def settle_batch(
    batch: Sequence[Finish],
    stored: Mapping[str, Endpoint],
    running_since: Mapping[str, datetime],
) -> list[Settled | None]:
    """Each finish of `batch` settled, or None where the fence does not hold (the endpoint is
    leased to the finishing worker and the claim's run still runs; a run that `runs_alone` only
    needs to be running): `stored` holds the batch's endpoints as read under lock (by id),
    `running_since` when each of its runs that is still `running` started (by run id). The
    batch is settled in order, as transactions of one item each would be: a later finish on the
    same endpoint sees the earlier one's lease released (so it does not hold), or re-plans the
    endpoint as the earlier one left it (runs alone)."""
    current = dict(stored)
    settled: list[Settled | None] = []
    for item in batch:
        claim = item.claim
        endpoint = current.get(claim.endpoint.id)
        started_at = running_since.get(claim.run_id)
        if (
            endpoint is None
            or started_at is None
            or (endpoint.lease_owner != item.worker_id and not runs_alone(claim))
        ):
            settled.append(None)
            continue
        running = started_run(claim, item.worker_id, started_at)
        one = settle(endpoint, running, item.response, item.now)
        current[endpoint.id] = one.endpoint
        settled.append(one)
    return settled
