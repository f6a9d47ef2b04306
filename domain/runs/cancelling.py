"""Cancelling a run by hand: a queued run never starts; a running one is marked, and
the worker that holds it (whichever it is) cuts its call short and records it `cancelled`.

The mark is in the store, so any worker sees it: each polls the marks of the runs it holds
(`ClaimRepository.cancels_asked`) and records the cut through the fenced `ClaimRepository.cancel`.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from cronpilot.domain.errors import RunFinished
from cronpilot.domain.model import Run, RunStatus


def cancel_asked(run: Run, by: str, now: datetime) -> Run:
    """`run` as a cancel asked by `by` at `now` leaves it: a queued run cancelled at once, a
    running one marked for its worker (asked twice, the first asker stays). Raises
    `RunFinished` for a run that has ended."""
    if run.status is RunStatus.QUEUED:
        return replace(
            run,
            status=RunStatus.CANCELLED,
            finished_at=now,
            error_message=f"cancelled by {by} before it started",
            cancel_requested_by=by,
        )
    if run.status is RunStatus.RUNNING:
        return run if run.cancel_requested_by is not None else replace(run, cancel_requested_by=by)
    raise RunFinished(run.id, run.status.value)


def cancelled_run(running: Run, now: datetime) -> Run:
    """The run its worker cut short on a cancel (`cancel_asked`), recorded at `now`."""
    by = running.cancel_requested_by or "an admin"
    return replace(
        running,
        status=RunStatus.CANCELLED,
        finished_at=now,
        duration_ms=(now - running.started_at).total_seconds() * 1000,
        error_message=f"cancelled by {by} while running",
    )
