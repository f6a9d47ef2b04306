"""Reading `Retry-After` and `Cronpilot-Next-Run` from an answer: every value the RFCs allow is
taken, everything else is ignored with a reason, and nothing raises."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from cronpilot.adapters.http.steering import read_steering
from cronpilot.domain.model import Steering

NOW = datetime(2030, 1, 7, 12, 0, tzinfo=UTC)
CAP = 3600.0


def retry_after(value: str, status: int = 503) -> Steering | None:
    return read_steering(status, {"Retry-After": value}, NOW, CAP)


def next_run(value: str) -> Steering | None:
    return read_steering(200, {"Cronpilot-Next-Run": value}, NOW, CAP)


def test_an_answer_without_steering_headers_has_none() -> None:
    assert read_steering(200, {"Content-Type": "application/json"}, NOW, CAP) is None


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("120", 120.0),
        (" 30 ", 30.0),
        ("0", 0.0),
        ("Mon, 07 Jan 2030 12:02:00 GMT", 120.0),
        ("Monday, 07-Jan-30 12:00:45 GMT", 45.0),  # RFC 850, obsolete but allowed
        ("Mon Jan  7 12:01:00 2030", 60.0),  # asctime
        ("Mon, 07 Jan 2030 11:00:00 GMT", 0.0),  # a date in the past asks for no wait
        ("7200", CAP),  # cut to the global cap
        ("0" * 5000 + "5", 5.0),  # leading zeros are no magnitude
        ("-0", 0.0),
        ("Tue, 08 Jan 2030 12:00:00 GMT", CAP),
    ],
)
def test_retry_after_in_seconds_or_as_an_http_date(value: str, seconds: float) -> None:
    assert retry_after(value) == Steering(retry_after_seconds=seconds)


@pytest.mark.parametrize("status", [429, 503])
def test_retry_after_is_read_on_429_and_503(status: int) -> None:
    steering = retry_after("5", status)
    assert steering is not None
    assert steering.retry_after_seconds == 5.0


@pytest.mark.parametrize("status", [200, 500, 502, 404])
def test_retry_after_on_other_statuses_is_not_read(status: int) -> None:
    assert retry_after("5", status) is None


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("-5", "negative"),
        ("99999999999999999999999999", "more than 365 days"),
        ("31536001", "more than 365 days"),
        ("Fri, 07 Jan 2050 12:00:00 GMT", "more than 365 days ahead"),
        ("soon", "neither delta-seconds nor an HTTP date"),
        ("1.5", "neither delta-seconds nor an HTTP date"),
        ("", "neither delta-seconds nor an HTTP date"),
        ("Mon, 99 Foo 2030 99:99:99 GMT", "neither delta-seconds nor an HTTP date"),
        ("Mon, 07 Jan 99999999999 12:00:00 GMT", "neither delta-seconds nor an HTTP date"),
        ("Fri, 31 Dec 9999 23:59:59 -2359", "more than 365 days ahead"),
        ("Mon, 07 Jan " + "9" * 5000 + " 12:00:00 GMT", "neither delta-seconds nor an HTTP date"),
    ],
)
def test_garbage_negative_or_absurd_retry_after_is_ignored_with_why(value: str, why: str) -> None:
    steering = retry_after(value)

    assert steering is not None
    assert steering.retry_after_seconds is None
    [reason] = steering.ignored
    assert reason.startswith("Retry-After ")
    assert reason.endswith(f" ignored: {why}")


@pytest.mark.parametrize(
    ("value", "why"),
    [("9" * 5000, "more than 365 days"), ("-" + "9" * 5000, "negative")],
)
def test_more_digits_than_python_reads_as_an_integer_are_ignored(value: str, why: str) -> None:
    """`int()` refuses more than 4,300 digits: such a value is absurd before it is read."""
    steering = retry_after(value, 429)

    assert steering is not None
    assert steering.retry_after_seconds is None
    [reason] = steering.ignored
    assert reason.endswith(f"({len(value)} characters) ignored: {why}")


def test_a_reason_quotes_a_long_header_cut() -> None:
    steering = retry_after("x" * 10_000)

    assert steering is not None
    [reason] = steering.ignored
    assert len(reason) < 150
    assert "(10000 characters)" in reason


@pytest.mark.parametrize(
    ("value", "interval"),
    [("30s", 30.0), ("5m", 300.0), ("1h30m", 5400.0), ("45", 45.0), ("2.5", 2.5)],
)
def test_cronpilot_next_run_as_a_duration(value: str, interval: float) -> None:
    assert next_run(value) == Steering(next_run_interval_seconds=interval)


@pytest.mark.parametrize(
    ("value", "at"),
    [
        ("2030-01-07T12:30:00Z", NOW + timedelta(minutes=30)),
        ("2030-01-07T13:30:00+01:00", NOW + timedelta(minutes=30)),
        ("2030-01-07T12:00:10.5Z", NOW + timedelta(seconds=10.5)),
    ],
)
def test_cronpilot_next_run_as_an_rfc3339_time(value: str, at: datetime) -> None:
    steering = next_run(value)

    assert steering == Steering(next_run_at=at)
    assert steering.next_run_at is not None
    assert steering.next_run_at.tzinfo is UTC


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("0s", "not a positive duration"),
        ("-30", "not a positive duration"),
        ("400d", "more than 365 days"),
        ("1e400", "neither a duration (30s) nor an RFC 3339 time"),
        ("tomorrow", "neither a duration (30s) nor an RFC 3339 time"),
        ("2030-01-07T12:30:00", "an RFC 3339 time needs a UTC offset (Z or +01:00)"),
        ("9999-12-31T23:59:59-23:59", "out of range in UTC"),
        ("0001-01-01T00:00:00+23:59", "out of range in UTC"),
    ],
)
def test_a_bad_cronpilot_next_run_is_ignored_with_why(value: str, why: str) -> None:
    steering = next_run(value)

    assert steering == Steering(ignored=(f"Cronpilot-Next-Run {value!r} ignored: {why}",))


def test_both_headers_on_one_answer() -> None:
    headers = {"Retry-After": "60", "Cronpilot-Next-Run": "garbage"}

    steering = read_steering(429, headers, NOW, CAP)

    assert steering is not None
    assert steering.retry_after_seconds == 60.0
    assert steering.next_run_interval_seconds is None
    assert len(steering.ignored) == 1
