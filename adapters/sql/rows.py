"""Translation between table rows and domain entities (a run's are in `run_rows`), and the
endpoint row operations that every repository shares (load under lock, save)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from enum import StrEnum
from typing import Any, TypeVar

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
from cronpilot.adapters.sql.retry_rows import retry_from_value, retry_value
from cronpilot.adapters.sql.rule_rows import rules_from_value, rules_value
from cronpilot.adapters.sql.tables import endpoints, jobs
from cronpilot.adapters.sql.target_rows import targets_from_value, targets_value
from cronpilot.domain.model import (
    CatchUp,
    Endpoint,
    EndpointSpec,
    HintSource,
    IntervalHint,
    Job,
    Objective,
    OneShotHint,
    Overlap,
    Pause,
    PlannerMode,
    Reference,
    Schedule,
    ScheduleSource,
)
from cronpilot.domain.planning.approvals import Approval, ApprovalState
from cronpilot.domain.ports import SecretCipher

_Enum = TypeVar("_Enum", bound=StrEnum)


def _members(kind: type[_Enum]) -> dict[str, _Enum]:
    """An enumeration's members by value: a dict lookup costs a tenth of calling the enumeration
    (`CatchUp("one")`), and every endpoint row read looks up several."""
    return {member.value: member for member in kind}


_CATCH_UPS = _members(CatchUp)
_OVERLAPS = _members(Overlap)
_OBJECTIVES = _members(Objective)
_PLANNER_MODES = _members(PlannerMode)
_HINT_SOURCES = _members(HintSource)
_SCHEDULE_SOURCES = _members(ScheduleSource)


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
        "catch_up": _CATCH_UPS[row["catch_up"]],
        "catch_up_window_seconds": row["catch_up_window_seconds"],
        "floor_seconds": row["floor_seconds"],
        "overlap": _OVERLAPS[row["overlap"]],
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


EMPTY_AS_NULL = {
    "headers": "{}",
    "depends_on": "[]",
    "dependants": "[]",
    "notify": "[]",
    "notify_targets": "[]",
    "change_ignores": "[]",
    "volatile_fields": "[]",
    "value_references": "[]",
}
"""The endpoints' JSON columns that are never NULL and empty on most endpoints, with their
empty value: `endpoint_from_row` reads NULL in them as empty, so that a statement whose rows
it reads may send them as NULL when empty (`claim_statement`), which the driver returns without
calling the JSON decoder the dialect installs in asyncpg (eight decoder calls a claimed row,
sixteen Python calls, as many as building its endpoint)."""


def endpoint_from_row(row: Mapping[Any, Any], cipher: SecretCipher | None) -> Endpoint:
    """An `Endpoint` from a row of `select_endpoints()` (or any row with `job_name`).

    Without a cipher the headers stay as stored (sealed): enough for anything that touches only
    the schedule state (`save_endpoint_state`), and it cannot fail on a foreign key.
    Raises `SecretUndecryptable` when `cipher` cannot open a secret.

    Every claimed row and every endpoint a catalog read lists comes through here: the
    enumerations are looked up by value (`_members`), the JSON lists that are empty on most
    endpoints (references, notify targets, dependencies) are not walked at all, and a NULL in
    one of `EMPTY_AS_NULL` reads as empty (the claim statement sends them so)."""
    references, targets = row["value_references"], row["notify_targets"]
    planner_mode, headers = row["planner_mode"], row["headers"]
    spec = EndpointSpec(
        name=row["name"],
        url=open_url(row["url"], cipher),
        description=row["description"],
        method=row["method"],
        headers=open_headers(headers, cipher) if headers else {},
        body=row["body"],
        references=(
            tuple([Reference(tuple(kept["at"]), kept["written"]) for kept in references])
            if references
            else ()
        ),
        timeout_seconds=row["timeout_seconds"],
        max_response_bytes=row["max_response_bytes"],
        planner_mode=_PLANNER_MODES[planner_mode] if planner_mode else None,
        depends_on=tuple(row["depends_on"] or ()),
        dependants=tuple(row["dependants"] or ()),
        only_if_changed=row["only_if_changed"],
        conditional=row["conditional"],
        rules=rules_from_value(row["rules"]),
        run_if=row["run_if"],
        success_when=row["success_when"],
        approval_timeout_seconds=row["approval_timeout_seconds"],
        change_ignores=tuple(row["change_ignores"] or ()),
        dangerous=row["dangerous"],
        objective=_OBJECTIVES[row["objective"]],
        limit=row["limit_key"],
        notify_targets=(
            tuple([open_target(target, cipher) for target in targets_from_value(targets)])
            if targets
            else ()
        ),
        **_finishing_from_row(row, cipher),
    )
    return Endpoint(
        id=row["id"],
        job_id=row["job_id"],
        job_name=row["job_name"],
        spec=spec,
        volatile_fields=tuple(row["volatile_fields"] or ()),
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


def _finishing_from_row(row: Mapping[Any, Any], cipher: SecretCipher | None) -> dict[str, Any]:
    """The `EndpointSpec` fields that `PLANNING_COLUMNS` hold, by name; the notify URLs opened
    with `cipher` (as stored without one)."""
    notify = row["notify"]
    return {
        "schedule": Schedule(
            cron=row["cron"], interval_seconds=row["interval_seconds"], timezone=row["timezone"]
        ),
        "min_interval_seconds": row["min_interval_seconds"],
        "max_interval_seconds": row["max_interval_seconds"],
        "notify": tuple([open_url(url, cipher) for url in notify]) if notify else (),
        "notify_after": row["notify_after"],
        "pause_after": row["pause_after"],
        "retry": retry_from_value(row["retry"]),
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
        spec = replace(spec, **_finishing_from_row(row, None))
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
            _HINT_SOURCES[row["hint_interval_source"] or HintSource.PLANNER],
        )
    oneshot = None
    if row["hint_oneshot_at"] is not None:
        oneshot = OneShotHint(
            row["hint_oneshot_at"],
            row["hint_oneshot_expires_at"],
            row["hint_oneshot_reason"],
            _HINT_SOURCES[row["hint_oneshot_source"] or HintSource.PLANNER],
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
        "next_run_source": _SCHEDULE_SOURCES[row["next_run_source"]],
        "lease_owner": row["lease_owner"],
        "lease_until": row["lease_until"],
        "retry_after_at": row["retry_after_at"],
        "next_slot_at": row["next_slot_at"],
        "late_since": row["late_since"],
        "overrun_since": row["overrun_since"],
    }


def approval_values(approval: Approval) -> dict[str, Any]:
    return field_values(approval)


def approval_from_row(row: Mapping[Any, Any]) -> Approval:
    return from_fields(Approval, row, state=ApprovalState(row["state"]))


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
