"""`success_when` judging a response: only one that would succeed, never raising."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from cronpilot.domain.model import EndpointSpec, ErrorKind, Response, Schedule
from cronpilot.domain.runs.assertions import judged

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _spec(condition: str | None) -> EndpointSpec:
    return EndpointSpec("check", "https://example.com", Schedule(60.0), success_when=condition)


def _answer(status: int = 200, body: object = None, **fields: object) -> Response:
    ends = T0 + timedelta(milliseconds=120)
    return Response(status, body, started_at=T0, finished_at=ends, **fields)


def test_a_response_that_satisfies_the_condition_is_left_as_it_is() -> None:
    answer = _answer(body={"errors": 0}, headers={"X-State": "ready"})
    condition = 'body.errors == 0 && headers["x-state"] == "ready" && duration_ms == 120.0'
    assert judged(_spec(condition), answer) is answer
    assert judged(_spec(None), answer) is answer


def test_a_failed_call_keeps_its_own_failure() -> None:
    down = _answer(503, {"errors": 9}, error_kind=ErrorKind.HTTP_STATUS, error_message="HTTP 503")
    assert judged(_spec("body.errors == 0"), down) is down


def test_a_condition_that_cannot_be_evaluated_fails_the_run_with_the_error() -> None:
    failed = judged(_spec("body.errors == 0"), _answer(body=["not", "an", "object"]))
    assert failed.error_kind is ErrorKind.ASSERTION
    assert failed.error_message is not None
    assert failed.error_message.startswith("success_when 'body.errors == 0' could not be evaluated")
    assert not failed.ok
