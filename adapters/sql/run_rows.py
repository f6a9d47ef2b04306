"""Translation between the runs' rows (the queue's and the history's) and `Run`, with the
request and attempts a run keeps as JSON."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from cronpilot.domain.model import (
    JSON,
    Attempt,
    BodyAbsence,
    ErrorKind,
    Run,
    RunStatus,
    RunTrigger,
    ScheduleSource,
    SentRequest,
    Steering,
)


def run_values(run: Run) -> dict[str, Any]:
    return {
        "id": run.id,
        "endpoint_id": run.endpoint_id,
        "job_id": run.job_id,
        "trace_id": run.trace_id,
        "parent_trace_id": run.parent_trace_id,
        "dag_run_id": run.dag_run_id,
        "trigger": run.trigger.value,
        "schedule_source": run.schedule_source.value,
        "status": run.status.value,
        "slot_at": run.slot_at,
        "started_at": run.started_at,
        "worker_id": run.worker_id,
        "attempt": run.attempt,
        "finished_at": run.finished_at,
        "duration_ms": run.duration_ms,
        "status_code": run.status_code,
        "body": run.body,
        "body_absence": run.body_absence.value if run.body_absence else None,
        "size_bytes": run.size_bytes,
        "body_hash": run.body_hash,
        "error_kind": run.error_kind.value if run.error_kind else None,
        "error_message": run.error_message,
        "due_at": run.due_at,
        "requested_by": run.requested_by,
        "attempts": [attempt_value(attempt) for attempt in run.attempts] or None,
        "request": None if run.request is None else request_value(run.request),
        "cancel_requested_by": run.cancel_requested_by,
        "not_modified": run.not_modified,
        "lease_until": run.lease_until,
    }


def run_from_row(row: Mapping[Any, Any]) -> Run:
    return Run(
        id=row["id"],
        endpoint_id=row["endpoint_id"],
        job_id=row["job_id"],
        trace_id=row["trace_id"],
        parent_trace_id=row["parent_trace_id"],
        dag_run_id=row["dag_run_id"],
        trigger=RunTrigger(row["trigger"]),
        schedule_source=ScheduleSource(row["schedule_source"]),
        status=RunStatus(row["status"]),
        slot_at=row["slot_at"],
        started_at=row["started_at"],
        worker_id=row["worker_id"],
        attempt=row["attempt"],
        finished_at=row["finished_at"],
        duration_ms=row["duration_ms"],
        status_code=row["status_code"],
        body=row["body"],
        body_absence=BodyAbsence(row["body_absence"]) if row["body_absence"] else None,
        size_bytes=row["size_bytes"],
        body_hash=row["body_hash"],
        error_kind=ErrorKind(row["error_kind"]) if row["error_kind"] else None,
        error_message=row["error_message"],
        due_at=row["due_at"],
        requested_by=row["requested_by"],
        attempts=tuple(_attempt_from_value(value) for value in row["attempts"] or ()),
        request=_request_from_value(row["request"]) if row["request"] else None,
        cancel_requested_by=row["cancel_requested_by"],
        not_modified=row["not_modified"],
        lease_until=row["lease_until"],
    )


def request_value(request: SentRequest) -> dict[str, JSON]:
    """A sent request as stored in the runs' `request` column (and shown by `--json`)."""
    return {
        "method": request.method,
        "url": request.url,
        "headers": request.headers,
        "body": request.body,
    }


def _request_from_value(value: dict[str, JSON]) -> SentRequest:
    return SentRequest(
        method=value["method"], url=value["url"], headers=value["headers"], body=value["body"]
    )


def attempt_value(attempt: Attempt) -> dict[str, JSON]:
    """An attempt as stored in the runs' `attempts` column (and shown by `--json`); the
    steering keys only when its answer carried a steering header."""
    value: dict[str, JSON] = {
        "attempt": attempt.attempt,
        "started_at": attempt.started_at.isoformat(),
        "duration_ms": attempt.duration_ms,
        "status_code": attempt.status_code,
        "error_kind": attempt.error_kind.value if attempt.error_kind else None,
        "error_message": attempt.error_message,
    }
    steering = attempt.steering
    if steering is not None:
        value["retry_after_seconds"] = steering.retry_after_seconds
        value["next_run_interval_seconds"] = steering.next_run_interval_seconds
        value["next_run_at"] = steering.next_run_at.isoformat() if steering.next_run_at else None
        value["ignored"] = list(steering.ignored)
    return value


def _attempt_from_value(value: dict[str, JSON]) -> Attempt:
    steering = None
    if "ignored" in value:
        # `attempt_value` writes every steering key, or none.
        at = value["next_run_at"]
        steering = Steering(
            retry_after_seconds=value["retry_after_seconds"],
            next_run_interval_seconds=value["next_run_interval_seconds"],
            next_run_at=datetime.fromisoformat(at) if at else None,
            ignored=tuple(value["ignored"]),
        )
    kind = value["error_kind"]
    return Attempt(
        attempt=value["attempt"],
        started_at=datetime.fromisoformat(value["started_at"]),
        duration_ms=value["duration_ms"],
        status_code=value["status_code"],
        error_kind=ErrorKind(kind) if kind else None,
        error_message=value["error_message"],
        steering=steering,
    )
