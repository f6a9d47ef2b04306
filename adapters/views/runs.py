"""A run as people and scripts read it. Keys are a stable interface for scripts: add, never
rename."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cronpilot.adapters.sql.rows import attempt_value, request_value
from cronpilot.adapters.views.formats import iso
from cronpilot.domain.access.secrets import mask_urls
from cronpilot.domain.model import Run
from cronpilot.domain.runs.tracing import trace_id_of

if TYPE_CHECKING:
    from cronpilot.domain.model import Attempt
    from cronpilot.usecases.run_control import Retried


def run_status(run: Run) -> str:
    """`success 200`, `failed 503`, `abandoned`."""
    code = f" {run.status_code}" if run.status_code is not None else ""
    return f"{run.status.value}{code}"


def retry_view(retried: Retried) -> dict[str, Any]:
    """What a retry queued (API, MCP): the new manual run, or the DAG dependant re-run alone."""
    if retried.run is None:
        return {"rerun": retried.endpoint.ref}
    return run_view(retried.run, with_body=False)


def run_view(run: Run, *, with_body: bool) -> dict[str, Any]:
    view: dict[str, Any] = {
        "id": run.id,
        "endpoint_id": run.endpoint_id,
        "job_id": run.job_id,
        # The W3C trace id the run's calls carried (a DAG dependant's: its DAG run's), and the
        # run's own id in its DAG run, which a dependant's `parent_trace_id` names.
        "trace_id": trace_id_of(run),
        "run_trace_id": run.trace_id,
        "parent_trace_id": run.parent_trace_id,
        "dag_run_id": run.dag_run_id,
        "trigger": run.trigger.value,
        "schedule_source": run.schedule_source.value,
        "status": run.status.value,
        "attempt": run.attempt,
        "worker_id": run.worker_id,
        "slot_at": iso(run.slot_at),
        "started_at": iso(run.started_at),
        "finished_at": iso(run.finished_at),
        "duration_ms": run.duration_ms,
        "status_code": run.status_code,
        # A 304 answered: `status_code` and the body are those of the answer it confirmed.
        "not_modified": run.not_modified,
        "size_bytes": run.size_bytes,
        "body_hash": run.body_hash,
        "body_absence": run.body_absence.value if run.body_absence is not None else None,
        "error_kind": run.error_kind.value if run.error_kind is not None else None,
        "error_message": mask_urls(run.error_message) if run.error_message else None,
        "attempts": [_attempt_view(attempt) for attempt in run.attempts],
        "due_at": iso(run.due_at),
        "requested_by": run.requested_by,
        "cancel_requested_by": run.cancel_requested_by,
        # Masked and bounded when the run was recorded (`domain.runs.sent_request`).
        "request": None if run.request is None else request_value(run.request),
    }
    if with_body:
        view["body"] = run.body
    return view


def _attempt_view(attempt: Attempt) -> dict[str, Any]:
    view = attempt_value(attempt)
    if attempt.error_message:
        view["error_message"] = mask_urls(attempt.error_message)
    return view
