"""The checks across fields and endpoints of a validated document (schedules, the floor, DAGs,
alerts, retries, approvals, rules), and the declarations they make."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from cronpilot.adapters.jobs_file.guards import (
    guard_call,
    guard_headers,
    guard_notify,
    guard_storable,
    guard_url,
)
from cronpilot.adapters.jobs_file.limits import declared_limits, endpoint_limit
from cronpilot.adapters.jobs_file.locations import Issue, Loc
from cronpilot.adapters.jobs_file.quiet import quiet_windows
from cronpilot.adapters.jobs_file.schema import (
    ConfigDocument,
    EndpointConfig,
    JobConfig,
    NotifyConfig,
)
from cronpilot.adapters.rules_config import schedule_problem
from cronpilot.adapters.settings import FLOOR_VARIABLE
from cronpilot.domain.errors import InvalidDependency
from cronpilot.domain.graph.dependencies import with_dependants
from cronpilot.domain.graph.field_paths import FieldPathError, canonical, parse_field_path
from cronpilot.domain.model import (
    DEFAULT_CATCH_UP_WINDOW_SECONDS,
    DEFAULT_NOTIFY_AFTER,
    CatchUp,
    EndpointSpec,
    Job,
    Overlap,
    RetryPolicy,
    Schedule,
)
from cronpilot.domain.planning.approvals import (
    DEFAULT_APPROVAL_TIMEOUT_SECONDS,
)
from cronpilot.domain.planning.call_budget import BudgetError
from cronpilot.domain.planning.freshness_planner import budget_of
from cronpilot.domain.ports import JobDeclaration
from cronpilot.domain.runs.retries import may_repeat
from cronpilot.domain.schedule.limits import Limit
from cronpilot.domain.schedule.quiet import QuietWindow
from cronpilot.domain.schedule.schedule import validate_schedule, zone
from cronpilot.domain.schedule.spacing import shortest_gap


def declarations(
    document: ConfigDocument, allowed_networks: Sequence[str], floor_seconds: float
) -> list[JobDeclaration]:
    """The declarations of a validated document, once every check has passed."""
    _refuse_duplicates([job.name for job in document.jobs], ("jobs",), "job")
    limits = declared_limits(document.limits)
    return [
        _declaration(job, i, allowed_networks, floor_seconds, limits)
        for i, job in enumerate(document.jobs)
    ]


def _declaration(
    job: JobConfig,
    index: int,
    allowed_networks: Sequence[str],
    floor_seconds: float,
    limits: Mapping[str, Limit],
) -> JobDeclaration:
    _refuse_duplicates([e.name for e in job.endpoints], ("jobs", index, "endpoints"), "endpoint")
    guard_storable(("jobs", index, "description"), job.description)
    guard_notify(job.notify, ("jobs", index, "notify"), allowed_networks)
    if job.limit is not None:
        endpoint_limit(job.limit, "", limits, ("jobs", index, "limit"))
    specs = [
        _spec(endpoint, ("jobs", index, "endpoints", i), allowed_networks, job, floor_seconds)
        for i, endpoint in enumerate(job.endpoints)
    ]
    specs = [
        replace(
            spec,
            limit=endpoint_limit(
                endpoint.limit or job.limit,
                spec.url,
                limits,
                ("jobs", index, "endpoints", i, "limit"),
            ),
        )
        for i, (spec, endpoint) in enumerate(zip(specs, job.endpoints, strict=True))
    ]
    try:
        specs = with_dependants(specs)
    except InvalidDependency as problem:
        raise Issue(
            ("jobs", index, "endpoints", problem.index, problem.field), problem.reason
        ) from problem
    if job.budget is not None:
        try:
            budget_of(job.budget, specs, datetime.now(UTC))
        except BudgetError as problem:
            raise Issue(("jobs", index, "budget"), str(problem)) from problem
    return JobDeclaration(
        job=Job(
            name=job.name,
            description=job.description,
            planner_mode=job.planner_mode,
            rejection_cooldown_seconds=job.rejection_cooldown,
            budget=job.budget,
        ),
        endpoints=specs,
        limits=tuple(limits[key] for key in sorted({s.limit for s in specs if s.limit})),
    )


def _refuse_duplicates(names: Sequence[str], loc: Loc, what: str) -> None:
    seen: set[str] = set()
    for i, name in enumerate(names):
        if name in seen:
            raise Issue((*loc, i, "name"), f"duplicate {what} name {name!r}")
        seen.add(name)


def _spec(
    endpoint: EndpointConfig,
    loc: Loc,
    allowed_networks: Sequence[str],
    job: JobConfig,
    floor_seconds: float,
) -> EndpointSpec:
    if endpoint.depends_on:
        schedule = _dependant_schedule(endpoint, loc)
    else:
        schedule = _schedule(endpoint, loc)
        _check_spacing(endpoint, schedule, loc, floor_seconds)
    guard_url((*loc, "url"), endpoint.url, allowed_networks)
    guard_notify(endpoint.notify, (*loc, "notify"), allowed_networks)
    _check_watch(job, endpoint, loc)
    guard_headers(endpoint.headers, (*loc, "headers"))
    guard_storable((*loc, "body"), endpoint.body)
    guard_storable((*loc, "description"), endpoint.description)
    for name in ("run_if", "success_when"):
        guard_storable((*loc, name), getattr(endpoint, name))
    spec = EndpointSpec(
        name=endpoint.name,
        url=endpoint.url,
        schedule=schedule,
        description=endpoint.description,
        method=endpoint.method,
        headers=dict(endpoint.headers),
        body=endpoint.body,
        min_interval_seconds=endpoint.min_interval,
        max_interval_seconds=endpoint.max_interval,
        timeout_seconds=endpoint.timeout,
        max_response_bytes=endpoint.max_response_size,
        planner_mode=endpoint.planner_mode,
        depends_on=tuple(endpoint.depends_on),
        only_if_changed=endpoint.only_if_changed,
        conditional=_conditional(endpoint, loc),
        run_if=endpoint.run_if,
        success_when=endpoint.success_when,
        approval_timeout_seconds=_approval(endpoint, loc),
        change_ignores=_change_ignores(endpoint.change_ignores, (*loc, "change_ignores")),
        **_alert_settings(job, endpoint),
        retry=_retry_policy(endpoint, (*loc, "retry")),
        accept_hints=endpoint.accept_hints,
        dangerous=endpoint.dangerous,
        objective=endpoint.objective,
        jitter_seconds=endpoint.jitter,
        catch_up=endpoint.catch_up or CatchUp.ONE,
        catch_up_window_seconds=(
            DEFAULT_CATCH_UP_WINDOW_SECONDS
            if endpoint.catch_up_window is None
            else endpoint.catch_up_window
        ),
        floor_seconds=floor_seconds,
        overlap=_overlap(job, endpoint, loc),
        rules=tuple(rule.rule() for rule in endpoint.rules),
        quiet=_quiet(job, endpoint, schedule, loc),
    )
    for i, rule in enumerate(spec.rules):
        guard_storable((*loc, "rules", i, "when"), rule.when)
        problem = schedule_problem(rule.then, spec)
        if problem is not None:
            raise Issue((*loc, "rules", i, "then"), problem)
    return spec


def _conditional(endpoint: EndpointConfig, loc: Loc) -> bool:
    """On unless turned off; asked for a method other than GET, a mistake."""
    if endpoint.conditional and endpoint.method != "GET":
        raise Issue((*loc, "conditional"), "conditional requests are for GET endpoints")
    return endpoint.conditional is not False


def _quiet(
    job: JobConfig, endpoint: EndpointConfig, schedule: Schedule, loc: Loc
) -> tuple[QuietWindow, ...]:
    """The endpoint's quiet windows: its own, else its job's; a dependant follows its
    upstreams' (the job's are not its own)."""
    if schedule.after_upstreams:
        if endpoint.quiet:
            raise Issue((*loc, "quiet"), "a dependant runs after its upstreams: quiet them")
        return ()
    if endpoint.quiet is not None:
        return quiet_windows(endpoint.quiet, schedule, (*loc, "quiet"))
    return quiet_windows(job.quiet, schedule, (*loc[:2], "quiet"))


def _approval(endpoint: EndpointConfig, loc: Loc) -> float | None:
    """How long the endpoint waits for an admin's approval in each DAG run; None: it needs
    none. A root endpoint has no DAG run to wait in (its `approval` is refused with its
    schedule, `_schedule`)."""
    if endpoint.approval is None:
        if endpoint.approval_timeout is not None:
            raise Issue((*loc, "approval_timeout"), "applies with approval: required only")
        return None
    if endpoint.approval_timeout is None:
        return DEFAULT_APPROVAL_TIMEOUT_SECONDS
    return endpoint.approval_timeout


def _change_ignores(paths: Sequence[str], loc: Loc) -> tuple[str, ...]:
    """The paths written the one way (`rows.0.id` is kept as `rows[0].id`)."""
    written: list[str] = []
    for i, path in enumerate(paths):
        try:
            one_way = canonical(parse_field_path(path))
        except FieldPathError as exc:
            raise Issue((*loc, i), str(exc)) from exc
        if one_way in written:
            raise Issue((*loc, i), f"{one_way} is listed twice")
        written.append(one_way)
    return tuple(written)


def _alert_settings(job: JobConfig, endpoint: EndpointConfig) -> dict[str, Any]:
    """`notify`, `notify_targets`, `notify_after` and `pause_after` of the spec: each that the
    endpoint sets replaces the job's, the others come from the job."""
    mine, jobs = endpoint.notify or NotifyConfig(), job.notify or NotifyConfig()
    urls = mine.urls if mine.urls is not None else jobs.urls
    targets = mine.targets if mine.targets is not None else jobs.targets
    return {
        "notify": tuple(urls or ()),
        "notify_targets": tuple(config.target() for config in targets or ()),
        "notify_after": mine.after or jobs.after or DEFAULT_NOTIFY_AFTER,
        "pause_after": endpoint.pause_after or job.pause_after,
        # A job's watch skips its DAG dependants: they have no slots (`_check_watch`).
        "missed_after_seconds": _watched(mine.missed_after, jobs.missed_after, endpoint),
        "late_after_seconds": _watched(mine.late_after, jobs.late_after, endpoint),
    }


def _overlap(job: JobConfig, endpoint: EndpointConfig, loc: Loc) -> Overlap:
    """The endpoint's overlap policy, else the job's, else `skip`; a DAG dependant has no
    slots, and keeps `skip` (its own is refused with the other schedule fields). An endpoint
    others depend on cannot `allow`: each of its runs begins a DAG run of them, and those would
    overlap too."""
    declared = endpoint.overlap or (None if endpoint.depends_on else job.overlap)
    if declared == "allow" and any(endpoint.name in other.depends_on for other in job.endpoints):
        where = (*loc, "overlap") if endpoint.overlap else (*loc[:-2], "overlap")
        raise Issue(
            where,
            f"'allow' cannot hold on endpoint '{endpoint.name}': other endpoints depend on it, "
            "and a DAG run of them starts after each of its runs; use 'skip' or 'queue_one'",
        )
    return Overlap(declared or Overlap.SKIP)


def _watched(mine: float | None, jobs: float | None, endpoint: EndpointConfig) -> float | None:
    if endpoint.depends_on:
        return None
    return mine if mine is not None else jobs


def _check_watch(job: JobConfig, endpoint: EndpointConfig, loc: Loc) -> None:
    """`missed_after` and `late_after` watch a schedule's slots: an endpoint's own on a DAG
    dependant (which has none) is refused, a job's skips its dependants; a late run is one that
    starts later than its jitter can make it."""
    mine = endpoint.notify or NotifyConfig()
    if endpoint.depends_on:
        for name in ("missed_after", "late_after"):
            if getattr(mine, name) is not None:
                raise Issue(
                    (*loc, "notify", name),
                    "an endpoint with depends_on has no slots to miss: it runs after its upstreams",
                )
        return
    late = _watched(mine.late_after, (job.notify or NotifyConfig()).late_after, endpoint)
    if late is not None and endpoint.jitter is not None and late <= endpoint.jitter:
        where = (*loc, "notify", "late_after") if mine.late_after is not None else (*loc, "jitter")
        raise Issue(
            where,
            f"late_after ({late:g}s) must be more than the jitter ({endpoint.jitter:g}s), "
            "which delays calls on purpose",
        )


def _retry_policy(endpoint: EndpointConfig, loc: Loc) -> RetryPolicy | None:
    retry = endpoint.retry
    if retry is None:
        return None
    if retry.max_backoff < retry.backoff:
        raise Issue((*loc, "max_backoff"), f"must be at least backoff ({retry.backoff:g}s)")
    policy = RetryPolicy(
        attempts=retry.attempts,
        backoff_seconds=retry.backoff,
        max_backoff_seconds=retry.max_backoff,
        on=tuple(dict.fromkeys(retry.on)),
        unsafe=retry.unsafe,
    )
    if policy.attempts > 1 and not may_repeat(policy, endpoint.method):
        raise Issue(
            (*loc, "unsafe"),
            f"{endpoint.method} is not idempotent: a retry may repeat its effect; "
            "set unsafe: true to retry it anyway",
        )
    return policy


_SCHEDULE_FIELDS = (
    "cron",
    "interval",
    "timezone",
    "min_interval",
    "max_interval",
    "jitter",
    "catch_up",
    "catch_up_window",
    "overlap",
)


def _dependant_schedule(endpoint: EndpointConfig, loc: Loc) -> Schedule:
    """A dependant runs when its upstreams succeed: a time of its own would run it without
    their responses, which its templates need."""
    for name in _SCHEDULE_FIELDS:
        if getattr(endpoint, name) is not None:
            raise Issue((*loc, name), "an endpoint with depends_on runs after its upstreams")
    return Schedule()


def _schedule(endpoint: EndpointConfig, loc: Loc) -> Schedule:
    """The baseline, checked one field at a time so that each error names its field."""
    for name in ("only_if_changed", "run_if"):
        if getattr(endpoint, name):
            raise Issue((*loc, name), "applies to an endpoint with depends_on only")
    if endpoint.approval is not None:
        raise Issue(
            (*loc, "approval"),
            "applies to an endpoint with depends_on only: a root endpoint has no DAG run to "
            "wait in",
        )
    if (endpoint.cron is None) == (endpoint.interval is None):
        raise Issue((*loc, "cron"), "set exactly one of 'cron' or 'interval'")
    if endpoint.timezone is not None:
        if endpoint.cron is None:
            raise Issue((*loc, "timezone"), "a time zone applies to 'cron' only")
        guard_call((*loc, "timezone"), lambda: zone(str(endpoint.timezone)))
    schedule = Schedule(
        cron=endpoint.cron,
        interval_seconds=endpoint.interval,
        timezone=endpoint.timezone or "UTC",
    )
    baseline_field = "cron" if endpoint.cron is not None else "interval"
    guard_call((*loc, baseline_field), lambda: validate_schedule(schedule))
    guard_call((*loc, "min_interval"), lambda: validate_schedule(schedule, endpoint.min_interval))
    guard_call(
        (*loc, "max_interval"), lambda: validate_schedule(schedule, None, endpoint.max_interval)
    )
    guard_call(
        (*loc, "min_interval"),
        lambda: validate_schedule(schedule, endpoint.min_interval, endpoint.max_interval),
    )
    return schedule


def _check_spacing(endpoint: EndpointConfig, schedule: Schedule, loc: Loc, floor: float) -> None:
    """No slot may come closer than the floor to the previous one, and a jittered call must
    leave the floor before the next slot: the baseline, the clamps and the jitter are checked
    against the shortest gap between the baseline's slots."""
    gap = shortest_gap(schedule)
    baseline = "cron" if schedule.cron is not None else "interval"
    between = "the interval" if schedule.cron is None else "the shortest gap between fires"
    floor_is = f"the floor {floor:g}s ({FLOOR_VARIABLE})"
    if gap is not None and gap < floor:
        raise Issue((*loc, baseline), f"slots {gap:g}s apart are closer than {floor_is}")
    for name in ("min_interval", "max_interval"):
        value = getattr(endpoint, name)
        if value is not None and value < floor:
            raise Issue((*loc, name), f"{value:g}s is below {floor_is}")
    jitter = endpoint.jitter
    if jitter is not None and gap is not None and jitter > gap - floor:
        raise Issue(
            (*loc, "jitter"),
            f"{jitter:g}s is too wide: at most {gap - floor:g}s, {between} ({gap:g}s) less "
            f"{floor_is}, so that a call never runs into the next slot",
        )
