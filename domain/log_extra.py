"""The `extra=` of every log record: `extra=log_extra("claim", count=3)`.

Every record carries an `action` naming what happened, one of `LogAction` (mypy refuses a name
not listed, so a typo cannot split one event's records under two names), and the fields given
as keywords. Each event is logged once, by the layer that knows most about it: a repository
does not log what it returns to a caller that reports it (claims, reaps, errors it raises).

`logging` refuses (with a KeyError, at the call) an extra named like a `LogRecord` attribute;
tests/unit/test_logs.py keeps such names out of the calls, and a field spread from a variable
that has one is kept as `field_<name>` rather than crash the code that logs it.
"""

from __future__ import annotations

import logging
from typing import Literal

LogAction = Literal[
    "abandon",
    "cancel",
    "analysis",
    "analysis_error",
    "analysis_failed",
    "analysis_lease_lost",
    "analysis_out_of_time",
    "apply",
    "approval_expired",
    "approval_requested",
    "approve",
    "backfill_requested",
    "budget_exhausted",
    "catch_up",
    "claim",
    "claim_skip_slot",
    "claim_undecryptable",
    "create_key",
    "db_upgrade",
    "delete",
    "dispatch_error",
    "dispatch_internal_error",
    "dispatch_refused",
    "drain",
    "drop_stale_waits",
    "extend_failed",
    "finish",
    "finish_batch_failed",
    "finish_statement_failed",
    "internal_error",
    "key_check",
    "lease_lost",
    "learn_failed",
    "listen",
    "listen_failed",
    "llm_retry",
    "llm_tool_choice_refused",
    "mcp_start",
    "metrics_store_unavailable",
    "missed",
    "missed_recovered",
    "no_workers",
    "notify_delivered",
    "notify_failed",
    "notify_internal_error",
    "notify_lease_lost",
    "notify_retry",
    "notify_store_error",
    "notify_unrecorded",
    "open_store",
    "pause",
    "notify_test",
    "redeliver",
    "periodic_failed",
    "planner_start",
    "propose",
    "probes_start",
    "prune",
    "prune_records",
    "roll_history_failed",
    "prune_workers",
    "reap",
    "recording_stalled",
    "refresh_provides_failed",
    "refresh_vectors_failed",
    "reject",
    "release",
    "resolve_refused",
    "resume",
    "run_requested",
    "run_store_unavailable",
    "schema_drift",
    "seal_urls",
    "simulator_start",
    "simulator_stop",
    "slot_already_run",
    "start",
    "steering_ignored",
    "stop",
    "store_available",
    "store_unavailable",
    "token_create",
    "token_revoke",
    "token_rotate",
    "token_use_unrecorded",
    "volatile_fields",
    "wake_failed",
    "wake_stale",
    "worker_process_died",
]
"""What a log record reports, one name per event, snake_case; the `action` field of its line."""

_RESERVED = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
}


def log_extra(action: LogAction, **fields: object) -> dict[str, object]:
    """`extra=` for a record of `action` with `fields`; a field named like a `LogRecord`
    attribute is kept as `field_<name>` rather than refused."""
    if _RESERVED.isdisjoint(fields):
        # The common case, kept cheap: some records are logged once per run.
        return {"action": action, **fields}
    return {"action": action} | {
        f"field_{key}" if key in _RESERVED else key: value for key, value in fields.items()
    }
