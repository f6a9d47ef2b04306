"""Jobs and endpoints, and what an apply did, as scripts read them (`--json`, the API, MCP).
Keys are a stable interface for scripts: add, never rename. Header secrets and URL credentials
are masked here, so no output path can forget to."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cronpilot.adapters.sql.quiet_rows import quiet_value
from cronpilot.adapters.sql.retry_rows import retry_value
from cronpilot.adapters.sql.rule_rows import rules_value
from cronpilot.adapters.sql.target_rows import target_value
from cronpilot.adapters.views.formats import iso
from cronpilot.adapters.views.runs import run_view
from cronpilot.domain.access.secrets import mask_headers, mask_url
from cronpilot.domain.alerts.notify_targets import masked

if TYPE_CHECKING:
    from cronpilot.domain.model import Endpoint, IntervalHint, Job, OneShotHint, Pause, Run
    from cronpilot.domain.ports import ApplyReport


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
        "budget": job.budget,
        "endpoints": endpoint_count,
        "paused": _pause_view(job.pause),
    }


def job_pause_view(job: Job) -> dict[str, Any]:
    """A job as a pause or resume leaves it: its name and pause."""
    return {"id": job.id, "name": job.name, "paused": _pause_view(job.pause)}


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
        "objective": spec.objective.value,
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
