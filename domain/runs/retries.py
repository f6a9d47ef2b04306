"""Retries within a slot: which failures a policy retries, which methods it may repeat, and
when retrying must give up so that the next call is never late nor closer than the floor.

Pure; the scheduler's slot runner (`scheduler.attempts`) waits and calls.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from cronpilot.domain.model import Attempt, Claim, ErrorKind, Response, RetryOn, RetryPolicy
from cronpilot.domain.runs.transitions import after_slot

MAX_ATTEMPTS = 10
"""The most calls a retry policy may make per slot."""
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT"})
"""Methods whose repetition has the effect of one call (RFC 9110 §9.2.2)."""


def may_repeat(policy: RetryPolicy, method: str) -> bool:
    """Whether `policy` may call `method` again: a non-idempotent call (POST, PATCH, DELETE)
    may already have had its effect, so it is repeated only when the policy says `unsafe`."""
    return policy.unsafe or method.upper() in IDEMPOTENT_METHODS


def failure_of(response: Response) -> RetryOn | None:
    """The retryable kind of failure `response` is, if it is one."""
    if response.error_kind is ErrorKind.TIMEOUT:
        return RetryOn.TIMEOUT
    if response.error_kind is ErrorKind.CONNECTION:
        return RetryOn.CONNECT
    status = response.status_code
    if status == 429:
        return RetryOn.TOO_MANY_REQUESTS
    if status is not None and 500 <= status <= 599:
        return RetryOn.SERVER_ERROR
    return None


def retries(policy: RetryPolicy, response: Response) -> bool:
    """Whether `policy` retries the call that answered `response`."""
    failure = failure_of(response)
    return failure is not None and failure in policy.on


def retry_deadline(claim: Claim, now: datetime) -> datetime | None:
    """No retry of `claim`'s run may start after this: one floor (`spec.floor_seconds`) before
    the endpoint's next call, so that neither is late nor closer to the other than the floor.
    None when nothing else is planned (a DAG dependant, a paused endpoint).

    The next call of a slot of the schedule is the one planned as if this slot had succeeded
    (no backoff). A queued run (manual, backfill) stands beside the schedule, which it does not
    move: its next call is the one planned already, whatever the run's own slot."""
    endpoint = claim.endpoint
    if claim.queued is None:
        next_call = after_slot(endpoint, claim.slot_at, True, now).next_run_at
    else:
        next_call = endpoint.next_run_at
    if next_call is None:
        return None
    return next_call - timedelta(seconds=endpoint.spec.floor_seconds)


def attempt_of(number: int, response: Response, now: datetime) -> Attempt:
    """The record of call `number` of a slot, from what it answered by `now`."""
    started, finished = response.started_at or now, response.finished_at or now
    return Attempt(
        attempt=number,
        started_at=started,
        duration_ms=(finished - started).total_seconds() * 1000,
        status_code=response.status_code,
        error_kind=response.error_kind,
        error_message=response.error_message,
        steering=response.steering,
    )
