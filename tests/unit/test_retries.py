"""The retry rules: which failures are retried, which methods may be repeated, and the deadline
no retry may reach (the endpoint's next slot)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from domain.model import (
    Endpoint,
    EndpointSpec,
    ErrorKind,
    OneShotHint,
    Response,
    RetryOn,
    RetryPolicy,
    Schedule,
)
from domain.retries import failure_of, may_repeat, retries, retry_deadline

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
    return replace(Endpoint(id="e1", job_id="j1", job_name="job", spec=spec), **state)


def test_the_deadline_is_the_next_slot_as_if_this_one_had_succeeded() -> None:
    failing = _endpoint(Schedule(interval_seconds=60), failure_count=5, last_slot_at=t(-60))

    # The failure streak would back the next run off; a retry must still stop at the grid.
    assert retry_deadline(failing, NOW, NOW) == t(60)


def test_the_deadline_of_a_cron_slot_is_its_next_fire_time() -> None:
    hourly = _endpoint(Schedule(cron="0 * * * *"))

    assert retry_deadline(hourly, NOW, t(5)) == t(3600)


def test_a_slot_fired_by_a_one_shot_hint_is_not_due_again_at_once() -> None:
    shot = _endpoint(
        Schedule(interval_seconds=600),
        oneshot_hint=OneShotHint(NOW, t(3600), "spike"),
        last_slot_at=t(-300),
    )

    assert retry_deadline(shot, NOW, NOW) == t(600)


def test_a_dependant_has_no_deadline_of_its_own() -> None:
    dependant = _endpoint(Schedule())

    assert retry_deadline(dependant, NOW, NOW) is None
