"""An endpoint's schedule in force, next and last run, rules and danger, in the words that
`endpoints list|show` and the console's pages read alike."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from cronpilot.adapters.sql.rule_rows import rules_value
from cronpilot.adapters.views.formats import clock_time, iso, relative, span
from cronpilot.adapters.views.runs import run_status
from cronpilot.adapters.views.schedules import schedule_text
from cronpilot.domain.model import Endpoint, EndpointSpec, Run, ScheduleSource
from cronpilot.domain.schedule.governor import fresh_interval_hint
from cronpilot.domain.schedule.pauses import held_until, job_holds


def in_force_text(endpoint: Endpoint, now: datetime) -> str:
    """The schedule that decides the runs now: an interval hint while it lasts (who wrote it,
    until when, over which baseline), else the baseline."""
    baseline = schedule_text(endpoint.spec.schedule)
    hint = fresh_interval_hint(endpoint, now)
    if hint is None:
        return baseline
    return (
        f"every {span(hint.interval_seconds)}, {hint.source.value} hint until "
        f"{clock_time(hint.expires_at, now)} (baseline {baseline})"
    )


def in_force_view(endpoint: Endpoint, now: datetime) -> dict[str, Any]:
    """`in_force` for scripts: the interval hint while it lasts, else the baseline."""
    hint = fresh_interval_hint(endpoint, now)
    schedule = endpoint.spec.schedule
    if hint is None:
        shown = {
            "source": "baseline",
            "interval_seconds": schedule.interval_seconds,
            "cron": schedule.cron,
            "by": None,
            "until": None,
        }
    else:
        shown = {
            "source": ScheduleSource.HINT_INTERVAL.value,
            "interval_seconds": hint.interval_seconds,
            "cron": None,
            "by": hint.source.value,
            "until": iso(hint.expires_at),
        }
    return {"in_force": shown}


def last_run_text(run: Run | None, now: datetime) -> str:
    if run is None:
        return "-"
    return f"{run_status(run)} {relative(run.finished_at or run.started_at, now)}"


def dangerous_text(spec: EndpointSpec) -> str:
    if not spec.dangerous:
        return "no"
    return "yes: a planner's run now or next time waits for review"


def rule_texts(spec: EndpointSpec) -> list[str]:
    """`when depth.body.pending > 200 then interval 30s (ttl 1h)`, one per rule in order, with
    whatever else the rule declares (as stored, so that a field a rule gains shows)."""
    lines = []
    for rule, stored in zip(spec.rules, rules_value(spec.rules) or [], strict=True):
        extra = ", ".join(
            name if value is True else f"{name} {value}"
            for name, value in stored.items()
            if name not in ("when", "then") and value not in (None, False)
        )
        lines.append(f"when {rule.when} then {rule.then.text()}" + (f", {extra}" if extra else ""))
    return lines


def next_run_text(endpoint: Endpoint, now: datetime) -> str:
    """When the next call goes out (a pause of its job holds it back), and the slot it stands
    for when jitter moved it."""
    if endpoint.next_run_at is None:
        return _never(endpoint)
    when = relative(endpoint.next_run_at, now)
    if job_holds(endpoint, now):
        resumes = held_until(endpoint, endpoint.next_run_at)
        when = "when the job resumes" if resumes is None else relative(resumes, now)
    if endpoint.next_slot_at is None:
        return when
    return f"{when} (slot {relative(endpoint.next_slot_at, now)})"


def _never(endpoint: Endpoint) -> str:
    """Why an endpoint has no next run: a pause, or a DAG dependant waiting for upstreams."""
    return "when its upstreams succeed" if endpoint.spec.depends_on else "never (paused)"
