"""The JSON shapes of `--json` output. Keys are a stable interface for scripts: add, never
rename. Header secrets and URL credentials are masked here, so no output path can forget to."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cronpilot.adapters.cli.output import iso
from cronpilot.adapters.sql.quiet_rows import quiet_value
from cronpilot.adapters.sql.rows import attempt_value, request_value, retry_value
from cronpilot.adapters.sql.rule_rows import rules_value
from cronpilot.adapters.sql.target_rows import target_value
from cronpilot.domain.access.secrets import mask_headers, mask_url, mask_urls
from cronpilot.domain.alerts.notify_targets import masked
from cronpilot.domain.runs.tracing import trace_id_of

if TYPE_CHECKING:
    from cronpilot.domain.alerts.alerts import Notification
    from cronpilot.domain.model import Attempt, Endpoint, IntervalHint, Job, OneShotHint, Pause, Run
    from cronpilot.domain.ports import ApplyReport
    from cronpilot.domain.schedule.limits import LimitStatus
    from cronpilot.usecases.queries.outputs import LearntOutput
    from cronpilot.usecases.run_control import Retried


def report_view(report: ApplyReport) -> dict[str, Any]:
    """What an apply did, by ref."""
    return {
        "created": report.created,
        "updated": report.updated,
        "unchanged": report.unchanged,
        "absent": report.absent,
    }


def job_view(job: Job, endpoint_count: int) -> dict[str, Any]:
    return {
        "id": job.id,
        "name": job.name,
        "description": job.description,
        "planner_mode": job.planner_mode.value,
        "rejection_cooldown_seconds": job.rejection_cooldown_seconds,
        "endpoints": endpoint_count,
        "paused": _pause_view(job.pause),
    }


def job_pause_view(job: Job) -> dict[str, Any]:
    """A job as a pause or resume leaves it: its name and pause."""
    return {"id": job.id, "name": job.name, "paused": _pause_view(job.pause)}


def limit_view(status: LimitStatus | None) -> dict[str, Any]:
    """`limit` of `endpoints show --json` and the API's endpoint (`limit_status_view`)."""
    return {"limit": None if status is None else limit_status_view(status)}


def limit_status_view(status: LimitStatus) -> dict[str, Any]:
    """A key as `limits list --json` and `GET /limits` show it: its bounds, calls in flight
    and the hold the last claim recorded (`held` 0: none now)."""
    state, limit = status.state, status.state.limit
    return {
        "key": limit.key,
        "concurrency": limit.concurrency,
        "rate": None if limit.rate is None else str(limit.rate),
        "burst": limit.burst,
        "in_flight": status.in_flight,
        "held": state.held,
        "hold_reason": None if state.hold_reason is None else state.hold_reason.value,
        "held_at": iso(state.held_at),
        "open_at": iso(state.open_at),
    }


def limit_text(status: LimitStatus | None) -> str:
    """`partner-api: 2/2 in flight, 5/s; holding 3 (concurrency) since 12:00:01`."""
    if status is None:
        return "-"
    state, limit = status.state, status.state.limit
    bounds = [f"{status.in_flight}/{limit.concurrency} in flight" if limit.concurrency else ""]
    bounds.append("" if limit.rate is None else f"{limit.rate} (burst {limit.burst})")
    text = f"{limit.key}: " + ", ".join(bound for bound in bounds if bound)
    if state.held and state.hold_reason is not None:
        text += f"; holding {state.held} ({state.hold_reason.value}) since {iso(state.held_at)}"
    return text


def endpoint_view(endpoint: Endpoint, last_run: Run | None) -> dict[str, Any]:
    spec = endpoint.spec
    return {
        "id": endpoint.id,
        "ref": endpoint.ref,
        "job": endpoint.job_name,
        "name": spec.name,
        "description": spec.description,
        "method": spec.method,
        "url": mask_url(spec.url),
        "headers": mask_headers(spec.headers),
        "body": spec.body,
        "schedule": {
            "cron": spec.schedule.cron,
            "interval_seconds": spec.schedule.interval_seconds,
            "timezone": spec.schedule.timezone,
        },
        "depends_on": list(spec.depends_on),
        "dependants": list(spec.dependants),
        "only_if_changed": spec.only_if_changed,
        "run_if": spec.run_if,
        "success_when": spec.success_when,
        "approval_timeout_seconds": spec.approval_timeout_seconds,
        "change_ignores": list(spec.change_ignores),
        "volatile_fields": list(endpoint.volatile_fields),
        "notify": [mask_url(url) for url in spec.notify],
        "notify_targets": [target_value(masked(target)) for target in spec.notify_targets],
        "notify_after": spec.notify_after,
        "pause_after": spec.pause_after,
        "missed_after_seconds": spec.missed_after_seconds,
        "late_after_seconds": spec.late_after_seconds,
        "late_since": iso(endpoint.late_since),
        "min_interval_seconds": spec.min_interval_seconds,
        "max_interval_seconds": spec.max_interval_seconds,
        "timeout_seconds": spec.timeout_seconds,
        "max_response_bytes": spec.max_response_bytes,
        "planner_mode": spec.planner_mode.value if spec.planner_mode is not None else None,
        "retry": retry_value(spec.retry),
        "accept_hints": spec.accept_hints,
        "dangerous": spec.dangerous,
        # Every field a rule declares, as stored: what a rule gains shows here too.
        "rules": rules_value(spec.rules) or [],
        "retry_after_at": iso(endpoint.retry_after_at),
        "next_run_at": iso(endpoint.next_run_at),
        "next_slot_at": iso(endpoint.next_slot),
        "next_run_source": endpoint.next_run_source.value,
        "jitter_seconds": spec.jitter_seconds,
        "catch_up": spec.catch_up.value,
        "catch_up_window_seconds": spec.catch_up_window_seconds,
        "floor_seconds": spec.floor_seconds,
        "quiet": quiet_value(spec.quiet) or [],
        "overlap": spec.overlap.value,
        "overrun_since": iso(endpoint.overrun_since),
        "paused": _pause_view(endpoint.pause),
        "job_paused": _pause_view(endpoint.job_pause),
        "interval_hint": _interval_hint_view(endpoint.interval_hint),
        "oneshot_hint": _oneshot_hint_view(endpoint.oneshot_hint),
        "failure_count": endpoint.failure_count,
        "last_slot_at": iso(endpoint.last_slot_at),
        "lease_owner": endpoint.lease_owner,
        "lease_until": iso(endpoint.lease_until),
        "last_run": None if last_run is None else run_view(last_run, with_body=False),
    }


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


def _pause_view(pause: Pause | None) -> dict[str, Any] | None:
    if pause is None:
        return None
    return {"reason": pause.reason, "until": iso(pause.until), "by": pause.by}


def _interval_hint_view(hint: IntervalHint | None) -> dict[str, Any] | None:
    if hint is None:
        return None
    return {
        "interval_seconds": hint.interval_seconds,
        "expires_at": iso(hint.expires_at),
        "reason": hint.reason,
        "source": hint.source.value,
    }


def _oneshot_hint_view(hint: OneShotHint | None) -> dict[str, Any] | None:
    if hint is None:
        return None
    return {
        "at": iso(hint.at),
        "expires_at": iso(hint.expires_at),
        "reason": hint.reason,
        "source": hint.source.value,
    }


def event_label(notification: Notification) -> str:
    """The event as a table shows it: `recovered (missed)` says which episode ended."""
    episode = (
        notification.payload.get("episode") if isinstance(notification.payload, dict) else None
    )
    kind = episode.get("kind") if isinstance(episode, dict) else None
    if notification.event.value == "recovered" and isinstance(kind, str):
        return f"recovered ({kind})"
    return notification.event.value


def hold_reason(notification: Notification) -> str | None:
    """Why a held notification was not sent: `blocked by etl/fetch`."""
    return None if notification.held_by is None else f"blocked by {notification.held_by}"


def target_kind(notification: Notification) -> str:
    """Where the notification goes, by kind: a `notify.urls` webhook is a `webhook` too."""
    target = notification.target
    return "webhook" if target is None else target.kind.value


def notification_view(notification: Notification, ref: str) -> dict[str, Any]:
    """The `--json` shape: keys are a stable interface for scripts."""
    n = notification
    return {
        "id": n.id,
        "event": n.event.value,
        "endpoint": ref,
        "endpoint_id": n.endpoint_id,
        "job_id": n.job_id,
        "url": mask_url(n.url),
        "target": None if n.target is None else n.target.kind.value,
        "kind": target_kind(n),
        "status": n.status.value,
        "attempts": n.attempts,
        "created_at": iso(n.created_at),
        "next_attempt_at": iso(n.next_attempt_at),
        "delivered_at": iso(n.delivered_at),
        "last_error": mask_urls(n.last_error) if n.last_error else None,
        "held_by": n.held_by,
        "reason": hold_reason(n),
        "payload": n.payload,
    }


def output_view(learnt: LearntOutput) -> dict[str, Any]:
    schema = learnt.schema
    observed = schema is not None and schema.observations > 0
    return {
        "endpoint": learnt.endpoint.ref,
        "observations": schema.observations if schema else 0,
        "schema": learnt.json_schema() if observed else None,
        "volatile_fields": list(learnt.endpoint.volatile_fields),
        "change_ignores": list(learnt.endpoint.spec.change_ignores),
        "drift": [
            {"run_id": e.run_id, "at": iso(e.at), "changes": list(e.changes)} for e in learnt.drift
        ],
    }
