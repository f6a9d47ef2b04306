"""The summary `cronpilot demo` prints at the end: each endpoint's runs, outcomes and what the
planner, approvals and notifications made of them, all read back from the database."""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import typer
from rich.console import Console

from cronpilot.adapters.cli.output import rich_table
from cronpilot.adapters.views.formats import short_id, span
from cronpilot.domain.model import Endpoint, Run, RunStatus, RunTrigger, ScheduleSource
from cronpilot.domain.paging import Cursor
from cronpilot.domain.planning.approvals import Approval, ApprovalState
from cronpilot.domain.ports import Store
from cronpilot.usecases.queries.approvals import list_approvals
from cronpilot.usecases.queries.catalog import list_endpoints
from cronpilot.usecases.queries.notifications import list_notifications
from cronpilot.usecases.queries.runs import RunQuery, page_runs

_RUNS_PAGE = 500
UNSUCCESSFUL = (RunStatus.FAILED, RunStatus.ABANDONED)
_VERB = {ApprovalState.APPROVED: "approve", ApprovalState.REJECTED: "reject"}


def outcome(run: Run | None) -> str:
    if run is None:
        return "-"
    detail = run.status_code or (run.error_kind.value if run.error_kind else "")
    return f"{run.status.value} {detail}".strip()


def endpoint_path(endpoint: Endpoint) -> str:
    return urlsplit(endpoint.spec.url).path


def failed(run: Run | None) -> bool:
    return run is not None and run.status in UNSUCCESSFUL


@dataclass(slots=True)
class EndpointSummary:
    ref: str
    path: str
    runs: int = 0
    succeeded: int = 0
    failed: int = 0
    skipped: int = 0
    bodies: int = 0
    dag: str | None = None
    """For a DAG dependant: what its runs were children of, why some were skipped, and the
    last answer (which shows the upstream data its request carried)."""
    markers: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    sources: list[ScheduleSource] = field(default_factory=list)
    """Schedule sources of consecutive runs, oldest first, repeats collapsed."""
    retried: list[Run] = field(default_factory=list)
    """Runs that took more than one attempt (`retry`)."""
    held: int = 0
    """Runs whose slot a `Retry-After` of the endpoint decided."""
    by_hand: list[Run] = field(default_factory=list)
    """Runs asked for by hand (`cronpilot run`)."""

    def feature_lines(self) -> list[str]:
        """What retries, `Retry-After` and runs by hand did on this endpoint, a line each."""
        lines = []
        if self.retried:
            most = max(run.attempt for run in self.retried)
            lines.append(
                f"retried {self.ref}: {len(self.retried)} of {self.runs} runs needed a retry "
                f"(at most {most} attempts); {_outcomes(self.retried)}"
            )
        if self.held:
            lines.append(
                f"retry-after {self.ref}: {self.held} runs waited for the endpoint's "
                "Retry-After (source retry-after)"
            )
        if self.by_hand:
            lines.append(
                f"manual {self.ref}: {len(self.by_hand)} run by hand; {_outcomes(self.by_hand)}"
            )
        return lines

    @property
    def schedule_changes(self) -> int:
        return max(len(self.sources) - 1, 0)


@dataclass(slots=True)
class DemoSummary:
    endpoints: list[EndpointSummary]
    alerts: list[str] = field(default_factory=list)
    """A line per alert raised, with what became of its delivery."""
    approvals: list[str] = field(default_factory=list)
    """A line per approval asked for: how long it waited, and what became of it."""

    def dag_lines(self) -> list[str]:
        return [e.dag for e in self.endpoints if e.dag is not None]

    def feature_lines(self) -> list[str]:
        features = [line for e in self.endpoints for line in e.feature_lines()]
        return features + self.approvals + self.alerts

    def totals(self) -> str:
        endpoints = self.endpoints
        markers = sum((e.markers for e in endpoints), Counter[str]())
        return (
            f"total: {sum(e.runs for e in endpoints)} runs on {len(endpoints)} endpoints, "
            f"{sum(e.succeeded for e in endpoints)} succeeded, "
            f"{sum(e.failed for e in endpoints)} failed; "
            f"bodies stored {sum(e.bodies for e in endpoints)}; markers: {_counts(markers)}; "
            f"schedule changes: {sum(e.schedule_changes for e in endpoints)}"
        )


async def _all_runs(store: Store, endpoint_id: str) -> list[Run]:
    runs: list[Run] = []
    after: Cursor | None = None
    while True:
        page = await page_runs(store.reading, RunQuery(endpoint=endpoint_id), _RUNS_PAGE, after)
        runs.extend(page.items)
        if page.next_cursor is None:
            return runs
        after = page.next_cursor


def _endpoint_summary(endpoint: Endpoint, newest_first: list[Run]) -> EndpointSummary:
    summary = EndpointSummary(endpoint.ref, endpoint_path(endpoint), runs=len(newest_first))
    for run in reversed(newest_first):
        summary.succeeded += run.status is RunStatus.SUCCESS
        summary.failed += run.status in UNSUCCESSFUL
        summary.skipped += run.status is RunStatus.SKIPPED
        if run.body_absence is not None:
            summary.markers[run.body_absence.value] += 1
        elif run.status_code is not None:
            summary.bodies += 1
        if run.error_kind is not None:
            summary.errors[run.error_kind.value] += 1
        if not summary.sources or summary.sources[-1] != run.schedule_source:
            summary.sources.append(run.schedule_source)
        if run.attempt > 1:
            summary.retried.append(run)
        summary.held += run.schedule_source is ScheduleSource.RETRY_AFTER
        if run.trigger is RunTrigger.MANUAL:
            summary.by_hand.append(run)
    if endpoint.spec.depends_on:
        summary.dag = _dag_line(endpoint, newest_first)
    return summary


_VALUES_READ = re.compile(r" \([^()]*\)$")


def _dag_line(endpoint: Endpoint, newest_first: list[Run]) -> str:
    upstreams = ", ".join(f"{endpoint.job_name}/{name}" for name in endpoint.spec.depends_on)
    # A run_if skip ends with the values it read, different each time: counted by reason.
    reasons = Counter(
        _VALUES_READ.sub("", (run.error_message or "").removeprefix("skipped: "))
        for run in newest_first
        if run.status is RunStatus.SKIPPED
    )
    answered = next((run.body for run in newest_first if run.status is RunStatus.SUCCESS), None)
    return (
        f"dag {endpoint.ref}: {len(newest_first)} runs as children of {upstreams}; "
        f"skipped: {_counts(reasons)}; last answer: {json.dumps(answered)}"
    )


async def summarise(store: Store) -> DemoSummary:
    endpoints = [state.endpoint for state in await list_endpoints(store.reading)]
    refs = {e.id: e.ref for e in endpoints}
    sent = await list_notifications(store.reading)
    alerts = [
        f"alert {n.event} {refs.get(n.endpoint_id, n.endpoint_id)}: {n.status} "
        f"({n.attempts} attempt{'' if n.attempts == 1 else 's'}) to {urlsplit(n.url).path}"
        for n in reversed(sent.items)
    ]
    asked = await list_approvals(store.reading, limit=_RUNS_PAGE)
    return DemoSummary(
        [_endpoint_summary(e, await _all_runs(store, e.id)) for e in endpoints],
        alerts,
        [_approval_line(a, refs.get(a.endpoint_id, a.endpoint_id)) for a in reversed(asked.items)],
    )


def _approval_line(approval: Approval, ref: str) -> str:
    """`approval billing/cleanup 1a2b3c4d: waited 2s, approved by cli:ann@box (…)`."""
    head = f"approval {ref} {short_id(approval.id)}"
    if approval.decided_at is None:
        return f"{head}: waiting for an admin until {approval.expires_at:%H:%M:%S}"
    waited = span((approval.decided_at - approval.requested_at).total_seconds())
    verb = _VERB.get(approval.state)
    if verb is None:
        return f"{head}: waited {waited}, {approval.state.value}: nobody decided in time"
    return (
        f"{head}: waited {waited}, {approval.state.value} by {approval.decided_by} "
        f"(as `cronpilot approvals {verb} {short_id(approval.id)}` does)"
    )


def _outcomes(runs: list[Run]) -> str:
    return "last: " + outcome(runs[-1])


def _counts(counter: Counter[str]) -> str:
    return ", ".join(f"{name} {count}" for name, count in sorted(counter.items())) or "-"


def print_summary(summary: DemoSummary, console: Console, rich: bool) -> None:
    if not rich:
        for e in summary.endpoints:
            typer.echo(
                f"summary {e.ref} {e.path}: runs={e.runs} ok={e.succeeded} failed={e.failed} "
                f"skipped={e.skipped} bodies={e.bodies} markers={_counts(e.markers)} "
                f"errors={_counts(e.errors)} "
                f"schedule={'->'.join(source.value for source in e.sources) or '-'}"
            )
        for line in [*summary.dag_lines(), *summary.feature_lines()]:
            typer.echo(line)
        typer.echo(summary.totals())
        return
    table = rich_table(
        "endpoint",
        "path",
        "runs",
        "ok",
        "failed",
        "skipped",
        "bodies",
        "markers",
        "errors",
        "schedule",
    )
    table.title = "what the database recorded"
    for e in summary.endpoints:
        table.add_row(
            e.ref,
            e.path,
            str(e.runs),
            str(e.succeeded),
            str(e.failed),
            str(e.skipped),
            str(e.bodies),
            _counts(e.markers),
            _counts(e.errors),
            " → ".join(source.value for source in e.sources) or "-",
        )
    console.print(table)
    for line in [*summary.dag_lines(), *summary.feature_lines()]:
        console.print(line, markup=False)
    console.print(summary.totals())
