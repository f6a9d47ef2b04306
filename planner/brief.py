"""The prompt of an analysis: what the model knows before it calls a tool. It carries the
endpoint's intent, schedule, clamps, hints, health figures and a compact view of its output
schema, and the newest response of the endpoint and of its closest siblings summed up in a
line each (`summary`) — never whole bodies, which the model reads through tools only as far as
it needs. (`paste_latest` is the exception, kept for the token-economy benchmark: it pastes the
whole newest responses instead of the summaries.)"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from statistics import mean

from cronpilot.domain.errors import InvalidSchedule
from cronpilot.domain.model import JSON, Endpoint, HintSource, Run, RunStatus
from cronpilot.domain.planning.change_rate import change_text
from cronpilot.domain.planning.context import DagContext, Neighbour
from cronpilot.domain.planning.freshness_planner import Suggestion
from cronpilot.domain.planning.planning import AnalysisClaim
from cronpilot.domain.rules.rules import Rule, RuleEvaluation, RuleOutcome
from cronpilot.domain.schedule.quiet import QuietWindow, describe, next_window
from cronpilot.planner.summary import run_summary

SYSTEM_PROMPT = (
    "You adapt one HTTP endpoint's schedule. The brief sums up the newest responses; read more "
    "only if needed. endpoint: a sibling's name, null the analysed one; fields: paths (a.b, "
    "items[0].id, items[*].id), [] none. Actions change the analysed endpoint within its "
    "clamps, for ttl_seconds, with a reason; confidence 0 a guess, 1 certain; times ISO-8601 "
    "(UTC). One call per answer; end with submit_analysis. If nothing needs changing, change "
    "nothing."
)
_SCHEMA_FIELDS = 30
HEALTH_WINDOWS = (timedelta(hours=1), timedelta(hours=4), timedelta(hours=24))
HEALTH_RUNS = 200
"""The most runs read for the windows: an endpoint run every few seconds has thousands a day,
and a rate over the newest 200 says as much as over all of them (the brief says so). Runs are
read whole, bodies included, so this also bounds what an analysis loads."""


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:g}s"


def health(runs: Sequence[Run], failure_streak: int) -> str:
    """Success rate, durations and failure streak over the recent runs."""
    finished = [run for run in runs if run.status.finished]
    if not finished:
        return "no finished runs yet"
    ok = sum(run.status is RunStatus.SUCCESS for run in finished)
    durations = sorted(run.duration_ms for run in finished if run.duration_ms is not None)
    timing = (
        f"duration mean {mean(durations):.0f} ms, max {durations[-1]:.0f} ms"
        if durations
        else "no durations"
    )
    return (
        f"last {len(finished)} runs: {ok} succeeded ({ok / len(finished):.0%}); {timing}; "
        f"failure streak {failure_streak}; newest slot {finished[0].slot_at.isoformat()}"
    )


def windowed_health(runs: Sequence[Run], now: datetime) -> str:
    """Run count and success rate over each of `HEALTH_WINDOWS` before `now`, from `runs`
    (newest first, at most `HEALTH_RUNS`): `1h 12 runs 92% ok; 4h …; 24h 200+ runs …` where
    the read stopped before the window's start."""
    finished = [run for run in runs if run.status.finished]
    cut = len(runs) >= HEALTH_RUNS
    parts = []
    for span in HEALTH_WINDOWS:
        start = now - span
        inside = [run for run in finished if run.slot_at >= start]
        hours = f"{span.total_seconds() / 3600:g}h"
        if not inside:
            parts.append(f"{hours} no runs")
            continue
        ok = sum(run.status is RunStatus.SUCCESS for run in inside)
        more = "+" if cut and runs[-1].slot_at >= start else ""
        parts.append(f"{hours} {len(inside)}{more} runs {ok / len(inside):.0%} ok")
    return "; ".join(parts)


def schema_view(schema: JSON | None) -> str:
    """`fraud_rate: number, orders: integer, …` from a JSON Schema's top-level properties."""
    if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict):
        return "not learned yet"
    fields = [
        f"{name}: {spec.get('type', 'any') if isinstance(spec, dict) else 'any'}"
        for name, spec in list(schema["properties"].items())[:_SCHEMA_FIELDS]
    ]
    return ", ".join(fields) or "an object without known fields"


def _by(source: HintSource) -> str:
    """Who wrote a hint, when not a planner: an endpoint asking through `Cronpilot-Next-Run`."""
    return "" if source is HintSource.PLANNER else f", set by the {source.value} itself"


def _suggested(suggestion: Suggestion | None) -> str:
    if suggestion is None:
        return "none (not estimated, or no schedule of its own to split calls with)"
    return f"{suggestion.text()}; graded autonomy trusts a proposal less the farther it departs"


def _hints(endpoint: Endpoint, now: datetime) -> str:
    parts = []
    if endpoint.interval_hint is not None and endpoint.interval_hint.expires_at > now:
        hint = endpoint.interval_hint
        parts.append(
            f"interval {_seconds(hint.interval_seconds)} until {hint.expires_at.isoformat()} "
            f"({hint.reason}{_by(hint.source)})"
        )
    if endpoint.oneshot_hint is not None and endpoint.oneshot_hint.expires_at > now:
        shot = endpoint.oneshot_hint
        parts.append(f"one-shot at {shot.at.isoformat()}{_by(shot.source)}")
    if endpoint.pause is not None:
        until = endpoint.pause.until.isoformat() if endpoint.pause.until else "resumed by hand"
        parts.append(f"paused until {until} ({endpoint.pause.reason})")
    return "; ".join(parts) or "none"


def neighbours_text(graph: DagContext) -> str:
    """`upstream fetch (dependency, latest success); downstream load (template, never ran)`."""

    def side(name: str, neighbours: Sequence[Neighbour]) -> str:
        shown = [
            f"{n.ref.split('/', 1)[-1]} ({', '.join(t.value for t in n.edge_types)}, "
            f"{'latest ' + n.latest_status if n.latest_status else 'never ran'})"
            for n in neighbours
        ]
        return f"{name} {', '.join(shown) or 'none'}"

    return f"{side('upstream', graph.upstream)}; {side('downstream', graph.downstream)}"


def _window_text(window: QuietWindow) -> str:
    held = "skip" if window.skips else f"every {_seconds(window.every_seconds)}"
    return f"{describe(window)} {window.timezone} ({held})"


def _quiet(endpoint: Endpoint, now: datetime) -> str:
    """`sat,sun Europe/Paris (skip); next 2030-01-12T00:00:00+00:00 to …`."""
    windows = endpoint.spec.quiet
    declared = "; ".join(_window_text(window) for window in windows)
    try:
        upcoming = next_window(windows, now)
    except InvalidSchedule:
        upcoming = None
    if upcoming is None:
        return declared
    return f"{declared}; next {upcoming.start.isoformat()} to {upcoming.end.isoformat()}"


def rules_text(rules: Sequence[Rule], evaluated: Sequence[RuleEvaluation]) -> str:
    """The endpoint's rules in order, each with what it gave in this pass: `holds`, `false
    (…)`, an error, or `not reached` (an earlier rule held)."""
    said = {e.number: e for e in evaluated}
    parts = []
    for number, rule in enumerate(rules, 1):
        found = said.get(number)
        if found is None:
            now = "not reached"
        elif found.outcome is RuleOutcome.ERROR:
            now = f"error: {found.detail}"
        elif found.outcome is RuleOutcome.NOT_HELD:
            now = found.detail
        else:
            now = f"HOLDS: {found.detail}"
        parts.append(f"rule {number}: when {rule.when} then {rule.then.text()} [{now}]")
    return "; ".join(parts)


def build_brief(
    claim: AnalysisClaim,
    *,
    job_description: str,
    siblings: Mapping[str, Endpoint],
    recent: Sequence[Run],
    schema: JSON | None,
    now: datetime,
    rules: Sequence[RuleEvaluation] = (),
    graph: DagContext | None = None,
    latest: Mapping[str, Run | None] | None = None,
    pasted: Mapping[str, JSON] | None = None,
    window: Sequence[Run] = (),
    suggestion: Suggestion | None = None,
) -> str:
    """`graph`: the endpoint's neighbours in the job's graph; `latest`: the newest run of the
    endpoint and of the siblings to sum up, by name; `window`: the endpoint's newest runs, at
    most `HEALTH_RUNS`, for the health by window; `suggestion`: the built-in planner's, from
    the change rates of the job's endpoints."""
    endpoint = claim.endpoint
    spec = endpoint.spec
    schedule = spec.schedule
    if schedule.cron is not None:
        baseline = f"cron {schedule.cron} ({schedule.timezone})"
    elif schedule.after_upstreams:
        baseline = f"after its upstreams ({', '.join(spec.depends_on)})"
    else:
        baseline = f"every {_seconds(schedule.interval_seconds)}"
    others = sorted(name for name in siblings if name != endpoint.name)
    lines = [
        f"Endpoint {endpoint.ref} ({spec.method}); planner mode {claim.mode.value}.",
        f"Intent: {spec.description or '(none given)'}",
        f"Job {endpoint.job_name}: {job_description or '(no description)'}; "
        f"siblings: {', '.join(others) or 'none'}",
        f"Baseline: {baseline}; clamps: min {_seconds(spec.min_interval_seconds)}, "
        f"max {_seconds(spec.max_interval_seconds)}",
        f"Hints now: {_hints(endpoint, now)}",
        f"Next run: {endpoint.next_run_at.isoformat() if endpoint.next_run_at else 'none'} "
        f"({endpoint.next_run_source.value})",
        f"Health: {health(recent, endpoint.failure_count)}",
        f"Health by window: {windowed_health(window, now)}",
        f"Change rate: {change_text(endpoint, window, now)}",
        f"Suggested interval: {_suggested(suggestion)}",
        f"Output fields: {schema_view(schema)}",
        f"Now: {now.isoformat()}",
    ]
    if spec.quiet:
        lines.append(
            f"Quiet windows (no call in them, whatever is proposed): {_quiet(endpoint, now)}"
        )
    if graph is not None and (graph.upstream or graph.downstream):
        lines.append(f"Graph: {neighbours_text(graph)}")
    if spec.rules:
        lines.append(
            "Rules (the first that holds proposes its action; a proposal of yours that "
            f"contradicts a rule that holds is refused): {rules_text(spec.rules, rules)}"
        )
    if pasted is None and latest:
        lines.append("Newest responses:")
        lines.extend(f"- {name}: {run_summary(run)}" for name, run in latest.items())
    if pasted is not None:
        lines.append("Latest responses: " + json.dumps(pasted, ensure_ascii=False, default=str))
    return "\n".join(lines)
