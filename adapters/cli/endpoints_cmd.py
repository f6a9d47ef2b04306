"""`cronpilot endpoints …`: what is scheduled, when it runs next and why."""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import typer

from cronpilot.adapters.bootstrap import build_clock
from cronpilot.adapters.cli import completion
from cronpilot.adapters.cli.output import (
    EndpointRef,
    OutputOption,
    add_row,
    details_table,
    new_table,
    note,
    print_data,
    print_table,
)
from cronpilot.adapters.cli.runtime import admin_settings, with_store
from cronpilot.adapters.views.catalog import endpoint_view
from cronpilot.adapters.views.endpoints import (
    dangerous_text,
    in_force_text,
    in_force_view,
    last_run_text,
    next_run_text,
    rule_texts,
)
from cronpilot.adapters.views.formats import iso, relative, span
from cronpilot.adapters.views.limits import limit_text, limit_view
from cronpilot.adapters.views.quiet import quiet_text, quiet_view
from cronpilot.adapters.views.schedules import (
    cron_fires,
    fire_time,
    fires_view,
    pause_text,
    schedule_text,
)
from cronpilot.domain.access.secrets import mask_headers, mask_url
from cronpilot.domain.alerts.notify_targets import address
from cronpilot.domain.model import (
    Endpoint,
    IntervalHint,
    OneShotHint,
    RetryPolicy,
    Run,
    ScheduleSource,
)
from cronpilot.domain.schedule.limits import LimitStatus
from cronpilot.domain.schedule.pauses import job_holds
from cronpilot.usecases.queries import catalog

if TYPE_CHECKING:
    from rich.table import Table


def list_endpoints(
    job: Annotated[
        str | None,
        typer.Option(
            "--job", help="Only this job's endpoints.", autocompletion=completion.job_names
        ),
    ] = None,
    output: OutputOption = None,
) -> None:
    """Endpoints with their schedule, next run (and why then) and last result."""
    states = with_store(admin_settings(), lambda store: catalog.list_endpoints(store.reading, job))
    now = build_clock().now()
    if output:
        print_data(
            output,
            [
                endpoint_view(s.endpoint, s.last_run) | in_force_view(s.endpoint, now)
                for s in states
            ],
        )
        return
    if not states:
        note("no endpoints yet; declare some with: cronpilot apply -f jobs.yaml")
        return
    table = new_table("Endpoint", "In force", "Next run", "Source", "Last run")
    for state in states:
        endpoint = state.endpoint
        add_row(
            table,
            endpoint.ref,
            in_force_text(endpoint, now),
            next_run_text(endpoint, now),
            "job paused" if job_holds(endpoint, now) else _source(endpoint),
            last_run_text(state.last_run, now),
        )
    print_table(table)


def show(
    ref: EndpointRef,
    output: OutputOption = None,
) -> None:
    """Everything about one endpoint: request (secrets masked), schedule, hints, pause."""
    now = build_clock().now()
    state = with_store(
        admin_settings(), lambda store: catalog.show_endpoint(store.reading, ref, now)
    )
    endpoint, last_run = state.endpoint, state.last_run
    schedule = endpoint.spec.schedule
    fires = cron_fires(schedule, now)
    if output:
        view = endpoint_view(endpoint, last_run) | in_force_view(endpoint, now)
        view |= quiet_view(endpoint, now)
        print_data(
            output,
            view
            | {"next_fires": fires_view(fires, schedule.timezone)}
            | {"last_analysed_at": iso(state.last_analysed_at), "changes": state.changes}
            | limit_view(state.limit),
        )
        return
    print_table(
        _details(
            endpoint,
            last_run,
            now,
            fires,
            looked=state.last_analysed_at,
            changes=state.changes,
            limit=state.limit,
        )
    )


def _details(
    endpoint: Endpoint,
    last_run: Run | None,
    now: datetime,
    fires: list[datetime],
    *,
    looked: datetime | None,
    changes: str | None,
    limit: LimitStatus | None,
) -> Table:
    spec = endpoint.spec
    # The cron's own times, whatever hints, backoff or a pause make of the next run.
    cron_rows = [("cron fires", "\n".join(fire_time(f, spec.schedule.timezone) for f in fires))]
    return details_table(
        [
            ("endpoint", endpoint.ref),
            ("id", endpoint.id),
            ("description", spec.description or "-"),
            ("request", f"{spec.method} {mask_url(spec.url)}"),
            ("headers", json.dumps(mask_headers(spec.headers)) if spec.headers else "-"),
            ("body", json.dumps(spec.body) if spec.body is not None else "-"),
            ("schedule", schedule_text(spec.schedule)),
            ("in force", in_force_text(endpoint, now)),
            *(cron_rows if fires else []),
            ("dag", _dag(endpoint)),
            ("success when", spec.success_when or "-"),
            ("clamps", _clamps(endpoint)),
            ("changes", changes or "-"),
            ("spacing", _spacing(endpoint)),
            ("quiet", quiet_text(endpoint, now)),
            ("timeout", span(spec.timeout_seconds)),
            ("max response", f"{spec.max_response_bytes} bytes"),
            ("planner", spec.planner_mode.value if spec.planner_mode else "as job"),
            ("alerts", _alerts(endpoint)),
            ("retry", _retry(spec.retry)),
            ("limit", limit_text(limit)),
            ("endpoint hints", "accepted" if spec.accept_hints else "ignored (accept_hints off)"),
            ("dangerous", dangerous_text(spec)),
            ("objective", spec.objective.value),
            ("rules", "; ".join(f"{n}. {t}" for n, t in enumerate(rule_texts(spec), 1)) or "-"),
            ("next run", next_run_text(endpoint, now)),
            ("source", _source(endpoint)),
            ("retry after", relative(endpoint.retry_after_at, now)),
            ("paused", pause_text(endpoint.pause, now)),
            ("job paused", pause_text(endpoint.job_pause, now)),
            ("hints", _hints(endpoint, now)),
            ("failures", str(endpoint.failure_count)),
            ("last run", last_run_text(last_run, now)),
            ("last looked at", relative(looked, now)),
        ]
    )


def _clamps(endpoint: Endpoint) -> str:
    low, high = endpoint.spec.min_interval_seconds, endpoint.spec.max_interval_seconds
    if low is None and high is None:
        return "-"
    return f"min {span(low) if low else '-'}, max {span(high) if high else '-'}"


def _spacing(endpoint: Endpoint) -> str:
    spec = endpoint.spec
    jitter = f"jitter {span(spec.jitter_seconds)}, " if spec.jitter_seconds else ""
    return (
        f"{jitter}catch up {spec.catch_up.value} within {span(spec.catch_up_window_seconds)}, "
        f"floor {span(spec.floor_seconds)}, overlap {spec.overlap.value}"
    )


def _retry(policy: RetryPolicy | None) -> str:
    if policy is None:
        return "-"
    on = ", ".join(kind.value for kind in policy.on)
    backoff = f"{span(policy.backoff_seconds)}..{span(policy.max_backoff_seconds)}"
    unsafe = ", unsafe" if policy.unsafe else ""
    return f"{policy.attempts} attempts on {on}, backoff {backoff}{unsafe}"


def _source(endpoint: Endpoint) -> str:
    """Why the next run is when it is, with who wrote the hint that decided it."""
    source = endpoint.next_run_source
    hint: IntervalHint | OneShotHint | None = None
    if source is ScheduleSource.HINT_INTERVAL:
        hint = endpoint.interval_hint
    elif source is ScheduleSource.HINT_ONESHOT:
        hint = endpoint.oneshot_hint
    return source.value if hint is None else f"{source.value} ({hint.source.value})"


def _hints(endpoint: Endpoint, now: datetime) -> str:
    hints = []
    if (interval := endpoint.interval_hint) is not None:
        hints.append(
            f"every {span(interval.interval_seconds)} until "
            f"{relative(interval.expires_at, now)}, by the {interval.source.value}: "
            f"{interval.reason}"
        )
    if (oneshot := endpoint.oneshot_hint) is not None:
        hints.append(
            f"once {relative(oneshot.at, now)}, by the {oneshot.source.value}: {oneshot.reason}"
        )
    return "; ".join(hints) or "-"


def _dag(endpoint: Endpoint) -> str:
    spec = endpoint.spec
    parts = []
    if spec.depends_on:
        skip = " (only if changed)" if spec.only_if_changed else ""
        gate = f" if {spec.run_if}" if spec.run_if is not None else ""
        if spec.approval_timeout_seconds is not None:
            gate += f", approved by an admin within {span(spec.approval_timeout_seconds)}"
        parts.append(f"after {', '.join(spec.depends_on)}{skip}{gate}")
    if spec.dependants:
        parts.append(f"then {', '.join(spec.dependants)}")
    return "; ".join(parts) or "-"


def _alerts(endpoint: Endpoint) -> str:
    """`notify https://… after 3 failures; slack https://hooks.slack.com/**** (failing);
    pause after 10 failures`, or `-`."""
    spec = endpoint.spec
    parts = []
    if spec.notify:
        urls = ", ".join(mask_url(url) for url in spec.notify)
        parts.append(f"notify {urls} after {spec.notify_after} failures")
    for target in spec.notify_targets:
        events = ", ".join(target.events) or "every event"
        parts.append(f"{target.kind} {address(target)} ({events})")
    if spec.pause_after is not None:
        parts.append(f"pause after {spec.pause_after} failures")
    if spec.missed_after_seconds is not None:
        parts.append(f"missed after {spec.missed_after_seconds:g}s")
    if spec.late_after_seconds is not None:
        parts.append(f"late after {spec.late_after_seconds:g}s")
    return "; ".join(parts) or "-"
