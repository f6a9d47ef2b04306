"""`cronpilot runs …`: what the calls answered, and an admin's hand on runs (cancel, retry)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import typer

from cronpilot.adapters.bootstrap import build_clock
from cronpilot.adapters.cli import completion
from cronpilot.adapters.cli.identity import actor
from cronpilot.adapters.cli.listing import (
    JobFilter,
    LimitOption,
    Listing,
    Referenced,
    with_endpoint_refs,
)
from cronpilot.adapters.cli.output import (
    OutputFormat,
    OutputOption,
    details_table,
    print_data,
    print_rich,
)
from cronpilot.adapters.cli.runtime import admin_settings, with_store, with_waker
from cronpilot.adapters.cli.time_options import SinceOption, UntilOption, window
from cronpilot.adapters.jsonvalue import dump_json
from cronpilot.adapters.views.catalog import endpoint_view
from cronpilot.adapters.views.formats import clock_time, iso, relative, short_id, span
from cronpilot.adapters.views.runs import run_status, run_view
from cronpilot.domain.access.secrets import mask_urls
from cronpilot.domain.model import Attempt, Endpoint, ErrorKind, Run, RunStatus
from cronpilot.domain.ports import Store
from cronpilot.domain.runs.tracing import trace_id_of
from cronpilot.usecases.queries.runs import RunQuery, page_runs, show_run

if TYPE_CHECKING:
    from rich.table import Table


RunsOf = Annotated[
    str | None,
    typer.Argument(
        help="`job/endpoint` or an endpoint id; left out, the runs of every endpoint (of --job).",
        autocompletion=completion.endpoint_refs,
        show_default=False,
    ),
]
StatusFilter = Annotated[RunStatus | None, typer.Option(help="Only the runs of this status.")]


def list_runs(
    ref: RunsOf = None,
    limit: LimitOption = 20,
    *,
    job: JobFilter = None,
    status: StatusFilter = None,
    since: SinceOption = None,
    until: UntilOption = None,
    output: OutputOption = None,
) -> None:
    """Recent runs, newest first: an endpoint's, a job's (--job), or every one; --status
    keeps those of one status."""
    # The first page of `GET /runs?endpoint=REF&job=&status=&limit=N&since=&until=`.
    query = RunQuery(job=job, endpoint=ref, status=status, within=window(since, until))
    if ref is not None:
        page = with_store(admin_settings(), lambda store: page_runs(store.reading, query, limit))
        Listing[Run](
            empty=f"no runs yet for {ref}",
            columns=("Run", "Slot", "Status", "Took", "Source", "Note"),
            row=_run_row,
            view=lambda run: run_view(run, with_body=False),
            wrap=("Note",),
        ).show(page.items, output)
        return
    found = with_endpoint_refs(lambda reading: page_runs(reading, query, limit))
    Listing[Referenced[Run]](
        empty=f"no runs{f' of job {job}' if job else ''}{f' {status.value}' if status else ''}",
        columns=("Run", "Endpoint", "Slot", "Status", "Took", "Source", "Note"),
        row=lambda found, now: _run_row(found.item, now, found.ref),
        view=lambda found: run_view(found.item, with_body=False) | {"endpoint": found.ref},
        wrap=("Note",),
    ).show(found, output)


def _run_row(run: Run, now: datetime, ref: str | None = None) -> list[str]:
    """A run's cells, its endpoint's `ref` second when runs of several endpoints are listed."""
    return [
        short_id(run.id),
        *([] if ref is None else [ref]),
        clock_time(run.slot_at, now),
        run_status(run),
        f"{run.duration_ms:.0f}ms" if run.duration_ms is not None else "-",
        run.trigger.value if run.trigger.requested else run.schedule_source.value,
        _run_note(run),
    ]


def show(
    run_id: Annotated[
        str,
        typer.Argument(help="A run id from `runs list`.", autocompletion=completion.run_ids),
    ],
    output: OutputOption = None,
) -> None:
    """One run in full, with its stored response body."""
    found = with_store(admin_settings(), lambda store: show_run(store.reading, run_id))
    print_run(*found, output=output)


RunId = Annotated[
    str,
    typer.Argument(
        help="A run id from `runs list` (or a unique prefix).", autocompletion=completion.run_ids
    ),
]


def cancel(run_id: RunId, output: OutputOption = None) -> None:
    """Cancel a run: a queued one never starts; a running one is cut short by the worker that
    holds it (whichever it is, within a second) and recorded `cancelled`."""
    # Imported here: `runs list` and `show` have no use for the DAG rules it brings.
    from cronpilot.usecases.run_control import cancel_run

    run = with_store(
        admin_settings(),
        lambda store: cancel_run(store.unit_of_work, run_id, actor(), build_clock().now()),
    )
    if output:
        print_data(output, run_view(run, with_body=False))
    elif run.status is RunStatus.CANCELLED:
        typer.echo(f"cancelled run {run.id} before it started")
    else:
        typer.echo(f"asked to cancel run {run.id}; the worker running it cuts it short")


def retry(run_id: RunId, output: OutputOption = None) -> None:
    """Run a run's endpoint again now, as a new manual run (the run itself stays as it is); a
    DAG dependant's run: its node alone, in its DAG run, with its upstreams' answers there."""
    from cronpilot.usecases.run_control import Retried, retry_run

    settings = admin_settings()

    async def act(store: Store) -> Retried:
        return await with_waker(
            settings,
            lambda waker: retry_run(
                store.unit_of_work, waker, run_id, actor(), build_clock().now()
            ),
        )

    retried = with_store(settings, act)
    run = retried.run
    if run is None:
        if output:
            print_data(output, endpoint_view(retried.endpoint, None))
            return
        typer.echo(
            f"re-running {retried.endpoint.ref} alone in its DAG run, retrying run {run_id}; "
            "a scheduler starts it now"
        )
        return
    if output:
        print_data(output, run_view(run, with_body=False))
        return
    typer.echo(f"queued run {run.id}, retrying run {run_id}")


def print_run(run: Run, endpoint: Endpoint, *, output: OutputFormat | None) -> None:
    """One run in full, with its stored response body (`runs show`)."""
    if output:
        print_data(output, run_view(run, with_body=True))
        return
    # Imported here: a listing has no use for rich's highlighter (`output.terminal_width`).
    from rich.highlighter import JSONHighlighter

    print_rich(_details(run, endpoint, build_clock().now()))
    if run.body is not None:
        # As rich's JSON renderable shows it, written by `dump_json`: rich's own encoding of
        # the body would call itself once per level of a deeply nested one.
        body = JSONHighlighter()(dump_json(run.body, indent=2))
        body.no_wrap = True
        print_rich(body)


def _run_note(run: Run) -> str:
    if run.error_kind is not None:
        # Driver messages may quote the URL called, query string and all.
        return mask_urls(f"{run.error_kind.value}: {run.error_message or ''}".rstrip(": "))
    if run.not_modified:
        return "not modified (304): the answer before it stands, no body sent"
    if run.body_absence is not None:
        return f"no body: {run.body_absence.value}"
    if run.error_message:
        # A DAG dependant's skip says why in its message (it has no error kind).
        return mask_urls(run.error_message)
    return f"{run.size_bytes} bytes" if run.size_bytes is not None else ""


def _requested(run: Run, now: datetime) -> list[tuple[str, str]]:
    if run.requested_by is None:
        return []
    asked = (
        f"by {run.requested_by} at {iso(run.started_at)}"
        if run.status is RunStatus.QUEUED
        else f"by {run.requested_by}"
    )
    return [("requested", f"{asked}, due {relative(run.due_at, now)}")]


def _trace(run: Run) -> str:
    """The W3C trace id the run's calls carried (a DAG dependant's is its DAG run's), then the
    run's own id in its DAG run where that differs, and its parent's."""
    sent = trace_id_of(run)
    ids = [f"run {run.trace_id}"] if run.trace_id != sent else []
    ids += [f"parent {run.parent_trace_id}"] if run.parent_trace_id else []
    return sent + (f" ({', '.join(ids)})" if ids else "")


def _details(run: Run, endpoint: Endpoint, now: datetime) -> Table:
    return details_table(
        [
            ("run", run.id),
            ("endpoint", endpoint.ref),
            ("trace", _trace(run)),
            ("trigger", f"{run.trigger.value}, {run.schedule_source.value}, attempt {run.attempt}"),
            ("status", run_status(run)),
            ("slot", relative(run.slot_at, now)),
            ("started", "-" if run.status is RunStatus.QUEUED else iso(run.started_at) or "-"),
            ("finished", iso(run.finished_at) or "-"),
            ("took", f"{run.duration_ms:.0f}ms" if run.duration_ms is not None else "-"),
            ("worker", run.worker_id or "-"),
            *_requested(run, now),
            *_sent(run),
            ("response", _run_note(run) or "-"),
            ("attempts", _attempts(run)),
            ("steering", _steering(run)),
        ]
    )


def _sent(run: Run) -> list[tuple[str, str]]:
    """The request the deciding call sent (masked when recorded), or why there is none."""
    sent = run.request
    if sent is None:
        return [("request", _why_no_request(run))]
    rows = [("request", f"{sent.method} {sent.url}")]
    rows.extend(("", f"{name}: {value}") for name, value in sent.headers.items())
    if sent.body is not None:
        rows.append(("", sent.body))
    return rows


def _why_no_request(run: Run) -> str:
    if not run.status.finished:
        return "not sent yet"
    if run.status is RunStatus.SKIPPED or run.error_kind is ErrorKind.TEMPLATE:
        return "none sent"
    if run.status is RunStatus.ABANDONED:
        return "not recorded: the run was abandoned before its call ended"
    if run.status is RunStatus.CANCELLED:
        if run.attempts:
            return "not recorded: the run was cancelled before its call ended"
        return "none sent: the run was cancelled before a request was sent"
    return "not recorded (runs recorded before cronpilot kept requests do not have it)"


def _attempts(run: Run) -> str:
    """Every call of the slot when there was more than one: `1: failed 503 (12ms); 2: 200`."""
    if len(run.attempts) < 2:
        return "-"
    return "; ".join(
        f"{attempt.attempt}: {_attempt_outcome(attempt)}"
        + (f" ({attempt.duration_ms:.0f}ms)" if attempt.duration_ms is not None else "")
        for attempt in run.attempts
    )


def _attempt_outcome(attempt: Attempt) -> str:
    """The status code it got, else the kind of failure (`timeout`, `connection`)."""
    if attempt.status_code is not None:
        return str(attempt.status_code)
    return attempt.error_kind.value if attempt.error_kind is not None else "-"


def _steering(run: Run) -> str:
    """What the deciding answer's headers asked of the schedule, and what was not taken."""
    steering = run.attempts[-1].steering if run.attempts else None
    if steering is None:
        return "-"
    parts = []
    if steering.retry_after_seconds is not None:
        parts.append(f"Retry-After: no call for {span(steering.retry_after_seconds)}")
    if steering.next_run_interval_seconds is not None:
        parts.append(
            f"Cronpilot-Next-Run: endpoint hint every {span(steering.next_run_interval_seconds)}"
        )
    if steering.next_run_at is not None:
        parts.append(f"Cronpilot-Next-Run: endpoint hint at {iso(steering.next_run_at)}")
    parts.extend(steering.ignored)
    return "; ".join(parts) or "-"
