"""`retry` and `accept_hints` in jobs.yaml: what they become, and one line for each bad input."""

from __future__ import annotations

import pytest

from cronpilot.adapters.jobs_file import parse_declarations
from cronpilot.adapters.settings import load_settings
from cronpilot.domain.errors import InvalidConfig
from cronpilot.domain.model import EndpointSpec, RetryOn, RetryPolicy

BASE = """\
jobs:
  - name: etl
    endpoints:
      - name: fetch
        url: https://93.184.216.34/fetch
        interval: 1m
"""
WHERE = "jobs.yaml: job 'etl' endpoint 'fetch' field"


def spec_of(extra: str) -> EndpointSpec:
    [declaration] = parse_declarations(BASE + extra, "jobs.yaml", [])
    [spec] = declaration.endpoints
    return spec


def error_of(extra: str) -> str:
    with pytest.raises(InvalidConfig) as caught:
        spec_of(extra)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_without_retry_a_failed_call_waits_for_the_next_slot() -> None:
    spec = spec_of("")

    assert spec.retry is None
    assert spec.accept_hints is False


def test_an_empty_retry_takes_the_defaults() -> None:
    assert spec_of("        retry: {}\n").retry == RetryPolicy(
        attempts=3,
        backoff_seconds=1.0,
        max_backoff_seconds=30.0,
        on=(RetryOn.TIMEOUT, RetryOn.CONNECT, RetryOn.SERVER_ERROR, RetryOn.TOO_MANY_REQUESTS),
        unsafe=False,
    )


def test_a_full_retry_and_accept_hints() -> None:
    spec = spec_of(
        "        method: POST\n"
        "        retry: {attempts: 5, backoff: 500ms, max_backoff: 1m, on: [429, 5xx], "
        "unsafe: true}\n"
        "        accept_hints: true\n"
    )

    assert spec.retry == RetryPolicy(
        attempts=5,
        backoff_seconds=0.5,
        max_backoff_seconds=60.0,
        on=(RetryOn.TOO_MANY_REQUESTS, RetryOn.SERVER_ERROR),
        unsafe=True,
    )
    assert spec.accept_hints is True


def test_the_longest_retry_wait_is_the_longest_interval() -> None:
    retry = spec_of("        retry: {backoff: 3650d, max_backoff: 3650d}\n").retry

    assert retry is not None
    assert retry.max_backoff_seconds == 3650 * 86400


def test_put_is_idempotent_and_retried_without_unsafe() -> None:
    spec = spec_of("        method: PUT\n        retry: {attempts: 2}\n")

    assert spec.retry is not None


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ("retry: {attempts: 0}", "'retry.attempts': Input should be greater than or equal to 1"),
        ("retry: {attempts: 100}", "'retry.attempts': Input should be less than or equal to 10"),
        ("retry: {attempts: 2.5}", "'retry.attempts': Input should be a valid integer"),
        ("retry: {attempts: true}", "'retry.attempts': Input should be a valid integer"),
        ("retry: {backoff: 0s}", "'retry.backoff': Input should be greater than 0"),
        ("retry: {backoff: -1s}", "'retry.backoff': '-1s' is not a duration"),
        ("retry: {backoff: 10s, max_backoff: 5s}", "'retry.max_backoff': must be at least backoff"),
        (
            "retry: {backoff: 100000000000000d}",
            "'retry.backoff': must be at most 3650d, the longest time between two slots",
        ),
        (
            "retry: {backoff: 1s, max_backoff: 3651d}",
            "'retry.max_backoff': must be at most 3650d, the longest time between two slots",
        ),
        (
            "retry: {on: [4xx]}",
            "'retry.on[0]': Input should be 'timeout', 'connect', '5xx' or '429'",
        ),
        ("retry: {on: []}", "'retry.on': List should have at least 1 item"),
        ("retry: {tries: 3}", "'retry.tries': unknown field"),
        ("retry: 3", "'retry': Input should be a valid dictionary"),
        ("accept_hints: maybe", "'accept_hints': Input should be a valid boolean"),
        ("dangerous: maybe", "'dangerous': Input should be a valid boolean"),
        (
            "method: POST\n        retry: {attempts: 2}",
            "'retry.unsafe': POST is not idempotent: a retry may repeat its effect; "
            "set unsafe: true to retry it anyway",
        ),
        ("method: DELETE\n        retry: {}", "'retry.unsafe': DELETE is not idempotent"),
    ],
)
def test_each_bad_retry_is_one_line_naming_the_field(extra: str, expected: str) -> None:
    message = error_of(f"        {extra}\n")

    assert message.startswith(WHERE)
    assert expected in message


def test_the_retry_after_cap_is_a_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    assert load_settings().max_retry_after_seconds == 3600
    monkeypatch.setenv("CRONPILOT_MAX_RETRY_AFTER_SECONDS", "600")
    assert load_settings().max_retry_after_seconds == 600

    monkeypatch.setenv("CRONPILOT_MAX_RETRY_AFTER_SECONDS", "0")
    with pytest.raises(InvalidConfig) as caught:
        load_settings()
    assert str(caught.value).startswith("CRONPILOT_MAX_RETRY_AFTER_SECONDS: ")
