"""Translation between table rows and domain entities, and the endpoint row operations that
every repository shares (load under lock, save)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from sqlalchemy import Select, bindparam, select, update
from sqlalchemy.engine import RowMapping
from sqlalchemy.ext.asyncio import AsyncConnection

from cronpilot.adapters.crypto import (
    open_headers,
    open_target,
    open_url,
    seal_headers,
    seal_target,
    seal_url,
)
from cronpilot.adapters.sql.field_rows import field_values, from_fields
from cronpilot.adapters.sql.quiet_rows import quiet_from_value, quiet_value
from cronpilot.adapters.sql.rule_rows import rules_from_value, rules_value
from cronpilot.adapters.sql.tables import endpoints, jobs
from cronpilot.adapters.sql.target_rows import targets_from_value, targets_value
from cronpilot.domain.model import (
    JSON,
    Attempt,
    BodyAbsence,
    CatchUp,
    Endpoint,
    EndpointSpec,
    ErrorKind,
    HintSource,
    IntervalHint,
    Job,
    Objective,
    OneShotHint,
    Overlap,
    Pause,
    PlannerMode,
    Reference,
    RetryOn,
    RetryPolicy,
    Run,
    RunStatus,
    RunTrigger,
    Schedule,
    ScheduleSource,
    SentRequest,
    Steering,
)
from cronpilot.domain.planning.approvals import Approval, ApprovalState
from cronpilot.domain.ports import SecretCipher


def job_values(job: Job) -> dict[str, Any]:
    return {
        "id": job.id,
        "name": job.name,
        "description": job.description,
        "planner_mode": job.planner_mode.value,
        "rejection_cooldown_seconds": job.rejection_cooldown_seconds,
        "budget": job.budget,
    }


def job_from_row(row: RowMapping, prefix: str = "") -> Job:
    """A `Job` from a row of `jobs`, or from any row naming its columns `<prefix><column>`
    (an endpoint row with `job_` columns: its `job_id` and `job_name` are the job's)."""
    return Job(
        id=row[f"{prefix}id"],
        name=row[f"{prefix}name"],
        description=row[f"{prefix}description"],
        planner_mode=PlannerMode(row[f"{prefix}planner_mode"]),
        rejection_cooldown_seconds=row[f"{prefix}rejection_cooldown_seconds"],
        pause=job_pause_from_row(row, prefix),
        budget=row[f"{prefix}budget"],
    )


def job_pause_values(pause: Pause | None) -> dict[str, Any]:
    """The pause columns of `jobs` for a job's pause (all NULL: not paused)."""
    return {
        "pause_reason": None if pause is None else pause.reason,
        "pause_until": None if pause is None else pause.until,
        "pause_by": None if pause is None else pause.by,
    }


def job_pause_from_row(row: Mapping[Any, Any], prefix: str = "") -> Pause | None:
    """A job's pause from its columns named `<prefix>pause_…` (`job_pause_values` in reverse)."""
    reason = row[f"{prefix}pause_reason"]
    if reason is None:
        return None
    return Pause(reason, row[f"{prefix}pause_until"], row[f"{prefix}pause_by"])


def job_columns(table: Any = jobs) -> tuple[Any, ...]:
    """What an endpoint row carries of its job (`table`, or a CTE of it): its name and pause."""
    return (
        table.c.name.label("job_name"),
        *(table.c[name].label(f"job_{name}") for name in job_pause_values(None)),
    )


def select_endpoints() -> Select[Any]:
    """Endpoint rows with their job's name and pause, which `Endpoint` carries."""
    return select(*endpoints.c, *job_columns()).join(jobs, jobs.c.id == endpoints.c.job_id)


def endpoint_values(endpoint: Endpoint, cipher: SecretCipher | None) -> dict[str, Any]:
    """Every column of `endpoints` for this entity (secret header values and URL parameters
    sealed)."""
    spec = endpoint.spec
    return {
        "id": endpoint.id,
        "job_id": endpoint.job_id,
        "name": spec.name,
        "description": spec.description,
        "url": seal_url(spec.url, cipher),
        "method": spec.method,
        "headers": seal_headers(spec.headers, cipher),
        "body": spec.body,
        "value_references": [
            {"at": list(reference.at), "written": reference.written}
            for reference in spec.references
        ],
        "timeout_seconds": spec.timeout_seconds,
        "max_response_bytes": spec.max_response_bytes,
        "planner_mode": spec.planner_mode.value if spec.planner_mode else None,
        "depends_on": list(spec.depends_on),
        "dependants": list(spec.dependants),
        "only_if_changed": spec.only_if_changed,
        "conditional": spec.conditional,
        "rules": rules_value(spec.rules),
        "run_if": spec.run_if,
        "success_when": spec.success_when,
        "approval_timeout_seconds": spec.approval_timeout_seconds,
        "change_ignores": list(spec.change_ignores),
        "dangerous": spec.dangerous,
        "objective": spec.objective.value,
        "limit_key": spec.limit,
        "volatile_fields": list(endpoint.volatile_fields),
        "notify_targets": targets_value([seal_target(t, cipher) for t in spec.notify_targets]),
        **_finishing_values(spec),
        "notify": [seal_url(url, cipher) for url in spec.notify],
        **state_values(endpoint),
    }


SPACING_COLUMNS = (
    "jitter_seconds",
    "catch_up",
    "catch_up_window_seconds",
    "floor_seconds",
    "overlap",
)
"""Declared columns of jitter, catch-up and the floor, named as their `EndpointSpec` fields:
planning reads them too."""


def _spacing_values(spec: EndpointSpec) -> dict[str, Any]:
    return {
        "jitter_seconds": spec.jitter_seconds,
        "catch_up": spec.catch_up.value,
        "catch_up_window_seconds": spec.catch_up_window_seconds,
        "floor_seconds": spec.floor_seconds,
        "overlap": spec.overlap.value,
    }


def _spacing_from_row(row: Mapping[Any, Any]) -> dict[str, Any]:
    return {
        "jitter_seconds": row["jitter_seconds"],
        "catch_up": CatchUp(row["catch_up"]),
        "catch_up_window_seconds": row["catch_up_window_seconds"],
        "floor_seconds": row["floor_seconds"],
        "overlap": Overlap(row["overlap"]),
    }


STATE_COLUMNS = (
    "hint_interval_seconds",
    "hint_interval_expires_at",
    "hint_interval_reason",
    "hint_oneshot_at",
    "hint_oneshot_expires_at",
    "hint_oneshot_reason",
    "paused",
    "pause_until",
    "pause_reason",
    "pause_by",
    "failure_count",
    "last_slot_at",
    "next_run_at",
    "next_run_source",
    "lease_owner",
    "lease_until",
    "retry_after_at",
    "hint_interval_source",
    "hint_oneshot_source",
    "next_slot_at",
    "late_since",
    "overrun_since",
)
"""The runtime columns, in `state_values`' order."""


def state_values(endpoint: Endpoint) -> dict[str, Any]:
    """The runtime columns: what claims, finishes and the reaper change."""
    interval, oneshot, pause = endpoint.interval_hint, endpoint.oneshot_hint, endpoint.pause
    return {
        "hint_interval_seconds": interval.interval_seconds if interval else None,
        "hint_interval_expires_at": interval.expires_at if interval else None,
        "hint_interval_reason": interval.reason if interval else None,
        "hint_oneshot_at": oneshot.at if oneshot else None,
        "hint_oneshot_expires_at": oneshot.expires_at if oneshot else None,
        "hint_oneshot_reason": oneshot.reason if oneshot else None,
        "paused": pause is not None,
        "pause_until": pause.until if pause else None,
        "pause_reason": pause.reason if pause else None,
        "pause_by": pause.by if pause else None,
        "failure_count": endpoint.failure_count,
        "last_slot_at": endpoint.last_slot_at,
        "next_run_at": endpoint.next_run_at,
        "next_run_source": endpoint.next_run_source.value,
        "lease_owner": endpoint.lease_owner,
        "lease_until": endpoint.lease_until,
        "retry_after_at": endpoint.retry_after_at,
        "hint_interval_source": interval.source.value if interval else None,
        "hint_oneshot_source": oneshot.source.value if oneshot else None,
        "next_slot_at": endpoint.next_slot_at,
        "late_since": endpoint.late_since,
        "overrun_since": endpoint.overrun_since,
    }


def endpoint_from_row(row: Mapping[Any, Any], cipher: SecretCipher | None) -> Endpoint:
    """An `Endpoint` from a row of `select_endpoints()` (or any row with `job_name`).

    Without a cipher the headers stay as stored (sealed): enough for anything that touches only
    the schedule state (`save_endpoint_state`), and it cannot fail on a foreign key.
    Raises `SecretUndecryptable` when `cipher` cannot open a secret."""
    finishing = _finishing_from_row(row)
    finishing["notify"] = tuple(open_url(url, cipher) for url in finishing["notify"])
    spec = EndpointSpec(
        name=row["name"],
        url=open_url(row["url"], cipher),
        description=row["description"],
        method=row["method"],
        headers=open_headers(row["headers"], cipher),
        body=row["body"],
        references=tuple(
            Reference(tuple(kept["at"]), kept["written"]) for kept in row["value_references"]
        ),
        timeout_seconds=row["timeout_seconds"],
        max_response_bytes=row["max_response_bytes"],
        planner_mode=PlannerMode(row["planner_mode"]) if row["planner_mode"] else None,
        depends_on=tuple(row["depends_on"]),
        dependants=tuple(row["dependants"]),
        only_if_changed=row["only_if_changed"],
        conditional=row["conditional"],
        rules=rules_from_value(row["rules"]),
        run_if=row["run_if"],
        success_when=row["success_when"],
        approval_timeout_seconds=row["approval_timeout_seconds"],
        change_ignores=tuple(row["change_ignores"]),
        dangerous=row["dangerous"],
        objective=Objective(row["objective"]),
        limit=row["limit_key"],
        notify_targets=tuple(
            open_target(target, cipher) for target in targets_from_value(row["notify_targets"])
        ),
        **finishing,
    )
    return Endpoint(
        id=row["id"],
        job_id=row["job_id"],
        job_name=row["job_name"],
        spec=spec,
        volatile_fields=tuple(row["volatile_fields"]),
        job_pause=job_pause_from_row(row, "job_"),
        **_state_from_row(row),
    )


PLANNING_COLUMNS = (
    endpoints.c.id,
    endpoints.c.cron,
    endpoints.c.timezone,
    endpoints.c.interval_seconds,
    endpoints.c.min_interval_seconds,
    endpoints.c.max_interval_seconds,
    endpoints.c.notify,
    endpoints.c.notify_after,
    endpoints.c.pause_after,
    endpoints.c.notify_targets,
    endpoints.c.retry,
    endpoints.c.accept_hints,
    endpoints.c.missed_after_seconds,
    endpoints.c.late_after_seconds,
    endpoints.c.quiet,
    *(endpoints.c[name] for name in SPACING_COLUMNS),
    *(endpoints.c[name] for name in STATE_COLUMNS),
)
"""What a finish reads of an endpoint (`domain.runs.transitions.after_finish`,
`domain.alerts.alerts`): the spec fields of `_finishing_from_row` (the schedule, the clamps, the
alerts, retries, steering, quiet windows, jitter, catch-up and the floor), the notification targets
(sealed) and the runtime state."""


def _finishing_values(spec: EndpointSpec) -> dict[str, Any]:
    """The `PLANNING_COLUMNS` of the spec as stored (`_finishing_from_row` in reverse)."""
    schedule = spec.schedule
    return {
        "cron": schedule.cron,
        "timezone": schedule.timezone,
        "interval_seconds": schedule.interval_seconds,
        "min_interval_seconds": spec.min_interval_seconds,
        "max_interval_seconds": spec.max_interval_seconds,
        "notify": list(spec.notify),
        "notify_after": spec.notify_after,
        "pause_after": spec.pause_after,
        "retry": retry_value(spec.retry),
        "accept_hints": spec.accept_hints,
        "missed_after_seconds": spec.missed_after_seconds,
        "late_after_seconds": spec.late_after_seconds,
        "quiet": quiet_value(spec.quiet),
        **_spacing_values(spec),
    }


def _finishing_from_row(row: Mapping[Any, Any]) -> dict[str, Any]:
    """The `EndpointSpec` fields that `PLANNING_COLUMNS` hold, by name."""
    return {
        "schedule": Schedule(
            cron=row["cron"], interval_seconds=row["interval_seconds"], timezone=row["timezone"]
        ),
        "min_interval_seconds": row["min_interval_seconds"],
        "max_interval_seconds": row["max_interval_seconds"],
        "notify": tuple(row["notify"]),
        "notify_after": row["notify_after"],
        "pause_after": row["pause_after"],
        "retry": _retry_from_value(row["retry"]),
        "accept_hints": row["accept_hints"],
        "missed_after_seconds": row["missed_after_seconds"],
        "late_after_seconds": row["late_after_seconds"],
        "quiet": quiet_from_value(row["quiet"]),
        **_spacing_from_row(row),
    }


def planned_from_row(row: RowMapping, held: Endpoint) -> Endpoint:
    """`held` (the endpoint as a worker claimed it) with the `PLANNING_COLUMNS` of `row` as
    stored now: enough to finish it and save its state (`save_endpoint_states`), without
    reading or opening the rest of the declaration (the request, its secrets)."""
    spec = held.spec
    # Compared as stored, which costs no parsing (no entity, enum or policy is built) unless
    # the declaration differs.
    held_values = _finishing_values(spec)
    if {name: row[name] for name in held_values} != held_values:
        # Re-declared while the call was under way: finish with the declaration as it is now
        # (its schedule, and whom to alert, when to pause itself, whether to take hints).
        spec = replace(spec, **_finishing_from_row(row))
    # The targets as stored, secrets sealed (comparing them would mean opening them): the
    # notifications they raise carry them sealed to the outbox, and the notifier opens them.
    if row["notify_targets"] or spec.notify_targets:
        spec = replace(spec, notify_targets=targets_from_value(row["notify_targets"]))
    return Endpoint(
        id=held.id,
        job_id=held.job_id,
        job_name=held.job_name,
        spec=spec,
        volatile_fields=held.volatile_fields,
        job_pause=held.job_pause,
        **_state_from_row(row),
    )


def _state_from_row(row: Mapping[Any, Any]) -> dict[str, Any]:
    """The `Endpoint` fields of the runtime columns (`state_values` in reverse)."""
    interval = None
    if row["hint_interval_seconds"] is not None:
        interval = IntervalHint(
            row["hint_interval_seconds"],
            row["hint_interval_expires_at"],
            row["hint_interval_reason"],
            HintSource(row["hint_interval_source"] or HintSource.PLANNER),
        )
    oneshot = None
    if row["hint_oneshot_at"] is not None:
        oneshot = OneShotHint(
            row["hint_oneshot_at"],
            row["hint_oneshot_expires_at"],
            row["hint_oneshot_reason"],
            HintSource(row["hint_oneshot_source"] or HintSource.PLANNER),
        )
    return {
        "interval_hint": interval,
        "oneshot_hint": oneshot,
        "pause": (
            Pause(row["pause_reason"], row["pause_until"], row["pause_by"])
            if row["paused"]
            else None
        ),
        "failure_count": row["failure_count"],
        "last_slot_at": row["last_slot_at"],
        "next_run_at": row["next_run_at"],
        "next_run_source": ScheduleSource(row["next_run_source"]),
        "lease_owner": row["lease_owner"],
        "lease_until": row["lease_until"],
        "retry_after_at": row["retry_after_at"],
        "next_slot_at": row["next_slot_at"],
        "late_since": row["late_since"],
        "overrun_since": row["overrun_since"],
    }


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


def _retry_from_value(value: JSON) -> RetryPolicy | None:
    if value is None:
        return None
    return RetryPolicy(
        attempts=value["attempts"],
        backoff_seconds=value["backoff_seconds"],
        max_backoff_seconds=value["max_backoff_seconds"],
        on=tuple(RetryOn(kind) for kind in value["on"]),
        unsafe=value["unsafe"],
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


def approval_values(approval: Approval) -> dict[str, Any]:
    return field_values(approval)


def approval_from_row(row: Mapping[Any, Any]) -> Approval:
    return from_fields(Approval, row, state=ApprovalState(row["state"]))


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


async def lock_endpoint(
    conn: AsyncConnection, endpoint_id: str, cipher: SecretCipher | None
) -> Endpoint | None:
    """The endpoint, row-locked until the transaction ends (PostgreSQL `FOR UPDATE`; SQLite's
    `BEGIN IMMEDIATE` already holds the only write lock)."""
    query = select_endpoints().where(endpoints.c.id == endpoint_id).with_for_update(of=endpoints)
    row = (await conn.execute(query)).mappings().one_or_none()
    return None if row is None else endpoint_from_row(row, cipher)


async def save_endpoint(
    conn: AsyncConnection, endpoint: Endpoint, cipher: SecretCipher | None
) -> None:
    values = endpoint_values(endpoint, cipher)
    del values["id"]
    await conn.execute(update(endpoints).where(endpoints.c.id == endpoint.id).values(values))


async def save_endpoint_state(conn: AsyncConnection, endpoint: Endpoint) -> None:
    """Save the runtime state only: the declared spec (and its sealed secrets) stays as stored."""
    await save_endpoint_states(conn, [endpoint])


async def save_endpoint_states(conn: AsyncConnection, changed: Sequence[Endpoint]) -> None:
    """`save_endpoint_state` for many endpoints in one executemany: one statement, compiled
    once, whatever the number of rows (building a statement per row costs more than sending
    it)."""
    statement = update(endpoints).where(endpoints.c.id == bindparam("b_id"))
    await conn.execute(
        statement, [{"b_id": endpoint.id, **state_values(endpoint)} for endpoint in changed]
    )
