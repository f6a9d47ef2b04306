"""What a claim asks for and gets back, and the pause rule every claim's SQL shares.

The claim itself is split by what it claims: the slots of due endpoints (`slot_claims`), the
queued runs asked for by hand or by a backfill (`queued_claims`), both at once in PostgreSQL's
one statement (`claim_statement`); the leases it takes are kept, given back and reaped in
`leases`. `SqlClaims` (`claims`) is the `ClaimRepository` that calls them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import BindParameter, ColumnElement, case, null, or_, select

from cronpilot.adapters.sql.tables import jobs
from cronpilot.domain.model import Run


@dataclass(frozen=True, slots=True)
class LeaseRequest:
    now: datetime
    due_by: datetime
    worker_id: str
    until: datetime
    limit: int


Leased = tuple[Mapping[str, Any], str | None, str | None]
"""A leased endpoint's row with the run id and trace id inserted for its slot (None: slot
taken). Rows, not entities: turning them into endpoints opens their secrets, which may fail."""

Started = tuple[Mapping[str, Any], Run | None]
"""An endpoint leased for a queued run, with that run as it was queued, before this claim
turned it `running` (None: another claimer started it first)."""


def job_holds(job_id: ColumnElement[str], now: datetime | BindParameter[Any]) -> Any:
    """`domain.schedule.pauses.job_holds` in SQL: the job `job_id` is paused at `now` (proven with
    `slot_claims.claim_candidates`)."""
    return (
        select(jobs.c.id)
        .where(
            jobs.c.id == job_id,
            jobs.c.pause_reason.isnot(None),
            or_(jobs.c.pause_until.is_(None), jobs.c.pause_until > now),
        )
        .exists()
    )


def held_until(at: ColumnElement[datetime]) -> ColumnElement[datetime | None]:
    """`domain.schedule.pauses.held_until` in SQL, on a row of `endpoints` joined with its job:
    `at`, or the end of the job's pause when later, or NULL while the job is paused until
    resumed."""
    return case(
        (jobs.c.pause_reason.is_(None), at),
        (jobs.c.pause_until.is_(None), null()),
        (jobs.c.pause_until > at, jobs.c.pause_until),
        else_=at,
    )
