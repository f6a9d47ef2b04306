"""Retry policies (`domain.model.RetryPolicy`) as the endpoints' `retry` column holds them
(JSON), and as `--json` and the API show them."""

from __future__ import annotations

from cronpilot.domain.model import JSON, RetryOn, RetryPolicy


def retry_value(policy: RetryPolicy | None) -> JSON:
    """A retry policy as stored in the endpoints' `retry` column (and shown by `--json`)."""
    if policy is None:
        return None
    return {
        "attempts": policy.attempts,
        "backoff_seconds": policy.backoff_seconds,
        "max_backoff_seconds": policy.max_backoff_seconds,
        "on": [kind.value for kind in policy.on],
        "unsafe": policy.unsafe,
    }


def retry_from_value(value: JSON) -> RetryPolicy | None:
    """`retry_value` in reverse."""
    if value is None:
        return None
    return RetryPolicy(
        attempts=value["attempts"],
        backoff_seconds=value["backoff_seconds"],
        max_backoff_seconds=value["max_backoff_seconds"],
        on=tuple(RetryOn(kind) for kind in value["on"]),
        unsafe=value["unsafe"],
    )
