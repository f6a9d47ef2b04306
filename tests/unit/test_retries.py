"""The retry rules: which failures are retried, which methods may be repeated, and the deadline
no retry may pass (one floor before the endpoint's next call, for a run by hand too)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from cronpilot.domain.model import (
    Claim,
    Endpoint,
    EndpointSpec,
    ErrorKind,
    OneShotHint,
    Pause,
    Response,
    RetryOn,
    RetryPolicy,
    Schedule,
    ScheduleSource,
)
from cronpilot.domain.runs.requested_runs import backfill_runs, manual_run
from cronpilot.domain.runs.retries import failure_of, may_repeat, retries, retry_deadline
from cronpilot.domain.runs.transitions import queued_claim, replanned

NOW = datetime(2030, 1, 7, 12, 0, tzinfo=UTC)


def t(seconds: float) -> datetime:
    return NOW + timedelta(seconds=seconds)


@pytest.mark.parametrize(
    ("response", "failure"),
    [
        (Response(None, error_kind=ErrorKind.TIMEOUT), RetryOn.TIMEOUT),
        (Response(None, error_kind=ErrorKind.CONNECTION), RetryOn.CONNECT),
        (Response(503, error_kind=ErrorKind.HTTP_STATUS), RetryOn.SERVER_ERROR),
        (Response(500, error_kind=ErrorKind.HTTP_STATUS), RetryOn.SERVER_ERROR),
        (Response(429, error_kind=ErrorKind.HTTP_STATUS), RetryOn.TOO_MANY_REQUESTS),
        (Response(404, error_kind=ErrorKind.HTTP_STATUS), None),
        (Response(200), None),
        (Response(None, error_kind=ErrorKind.BLOCKED_ADDRESS), None),
        (Response(None, error_kind=ErrorKind.TEMPLATE), None),
        (Response(None, error_kind=ErrorKind.INTERNAL), None),
    ],
)
def test_which_failures_can_be_retried(response: Response, failure: RetryOn | None) -> None:
    assert failure_of(response) is failure


def test_a_policy_retries_only_the_failures_it_names() -> None:
    only_timeouts = RetryPolicy(on=(RetryOn.TIMEOUT,))

    assert retries(only_timeouts, Response(None, error_kind=ErrorKind.TIMEOUT))
    assert not retries(only_timeouts, Response(503, error_kind=ErrorKind.HTTP_STATUS))
    assert not retries(RetryPolicy(), Response(200))


@pytest.mark.parametrize(
    ("method", "safe"),
    [
        ("GET", True),
        ("HEAD", True),
        ("OPTIONS", True),
        ("PUT", True),
        ("get", True),
        ("POST", False),
        ("PATCH", False),
        ("DELETE", False),
    ],
)
def test_only_idempotent_methods_are_repeated_unless_unsafe(method: str, safe: bool) -> None:
    assert may_repeat(RetryPolicy(), method) is safe
    assert may_repeat(RetryPolicy(unsafe=True), method)


def _endpoint(schedule: Schedule, **state: object) -> Endpoint:
    spec = EndpointSpec(name="e", url="https://example.com/e", schedule=schedule)
    return replanned(
        replace(Endpoint(id="e1", job_id="j1", job_name="job", spec=spec), **state), NOW
    )


def _slot(endpoint: Endpoint) -> Claim:
    """The claim of the schedule's slot at NOW."""
    return Claim(endpoint, "r1", NOW, "t1", t(60), ScheduleSource.BASELINE)


def test_the_deadline_is_one_floor_before_the_next_slot_as_if_this_one_had_succeeded() -> None:
    failing = _endpoint(Schedule(interval_seconds=60), failure_count=5, last_slot_at=t(-60))

    # The failure streak would back the next run off; a retry must still stop at the grid, one
    # floor (1 s by default) before it, so that it is not closer to the next call than the floor.
    assert retry_deadline(_slot(failing), NOW) == t(59)


def test_a_retry_keeps_the_floor_from_a_near_next_slot() -> None:
    """Every 5 s, floor 1 s: a retry starting at +4.9 s would be 0.1 s from the next call."""
    quick = _endpoint(Schedule(interval_seconds=5), last_slot_at=t(-5))
    assert quick.spec.floor_seconds == 1.0

    assert retry_deadline(_slot(quick), NOW) == t(4)


def test_the_deadline_of_a_cron_slot_is_its_next_fire_time() -> None:
    hourly = _endpoint(Schedule(cron="0 * * * *"))

    assert retry_deadline(_slot(hourly), t(5)) == t(3599)


def test_a_slot_fired_by_a_one_shot_hint_is_not_due_again_at_once() -> None:
    shot = _endpoint(
        Schedule(interval_seconds=600),
        oneshot_hint=OneShotHint(NOW, t(3600), "spike"),
        last_slot_at=t(-300),
    )

    assert retry_deadline(_slot(shot), NOW) == t(599)


def test_a_dependant_has_no_deadline_of_its_own() -> None:
    dependant = _endpoint(Schedule())

    assert retry_deadline(_slot(dependant), NOW) is None


def test_a_manual_run_retries_until_the_next_scheduled_call_not_an_interval_after_it() -> None:
    """Every hour, last run at 12:00, run by hand at 12:50: the schedule still calls at 13:00."""
    hourly = _endpoint(Schedule(interval_seconds=3600), last_slot_at=NOW)
    asked = t(50 * 60)
    claim = queued_claim(hourly, manual_run(hourly, "ann", asked), t(3600))

    assert hourly.next_run_at == t(3600)
    assert retry_deadline(claim, asked) == t(3599)


def test_a_backfill_of_a_never_run_cron_endpoint_may_retry_until_its_next_fire_time() -> None:
    """An old slot is no reason to give up at once: the next call is the schedule's, at 13:00."""
    hourly = _endpoint(Schedule(cron="0 * * * *"))
    [backfill] = backfill_runs(hourly, [t(-4 * 3600)], 10, "ann", t(1800))
    claim = queued_claim(hourly, backfill, t(1860))

    assert retry_deadline(claim, t(1800)) == t(3599)


def test_a_manual_run_of_a_paused_endpoint_has_no_deadline() -> None:
    paused = _endpoint(Schedule(interval_seconds=60), pause=Pause("by hand"))
    claim = queued_claim(paused, manual_run(paused, "ann", NOW), t(60))

    assert retry_deadline(claim, NOW) is None
