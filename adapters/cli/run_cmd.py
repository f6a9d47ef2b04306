"""`cronpilot run` and `cronpilot backfill`: runs asked for by hand, queued for the scheduler
workers (`usecases.run_requests`); the schedule is left as it is."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated

import typer

from cronpilot.adapters.bootstrap import build_clock
from cronpilot.adapters.cli.exit_codes import EXIT_RUN_FAILED
from cronpilot.adapters.cli.identity import actor
from cronpilot.adapters.cli.output import EndpointRef, OutputOption, note, print_data
from cronpilot.adapters.cli.runs_cmd import print_run
from cronpilot.adapters.cli.runtime import admin_settings, with_store, with_waker
from cronpilot.adapters.durations import parse_duration
from cronpilot.adapters.views.formats import iso, relative, span
from cronpilot.adapters.views.schedules import pause_text
from cronpilot.domain.errors import CronpilotError
from cronpilot.domain.model import Endpoint, Run, RunStatus
from cronpilot.domain.ports import Store
from cronpilot.domain.runs.requested_runs import DEFAULT_MAX_SLOTS, MAX_SLOTS
from cronpilot.domain.schedule.pauses import job_holds
from cronpilot.usecases.queries.runs import show_run
from cronpilot.usecases.run_requests import BackfillReport, request_backfill, request_run

POLL_SECONDS = 0.2
"""How often `run --wait` looks at the store: a manual run starts at once, and most calls are
short."""
MAX_WAIT_SECONDS = 24 * 3600.0


class RunNotFinished(CronpilotError):
    """`run --wait` gave up waiting; the run goes on (or stays queued) without it."""

    def __init__(self, run: Run, waited: float, held: str | None) -> None:
        because = f" because {held}" if held else ""
        super().__init__(
            f"run {run.id} is still {run.status.value} after {span(waited)}{because}; it was "
            f"not cancelled (see `cronpilot runs show {run.id}`)"
        )
        self.run = run


def _held_by_job(endpoint: Endpoint, now: datetime) -> str | None:
    """Why a queued run of `endpoint` waits: its job's pause holds every run back (an
    endpoint's own pause does not hold a run asked for by hand), or None."""
    if endpoint.job_pause is None or not job_holds(endpoint, now):
        return None
    return f"its job {endpoint.job_name} is paused ({pause_text(endpoint.job_pause, now)})"


def run(
    ref: EndpointRef,
    wait: Annotated[
        bool, typer.Option("--wait", help="Wait for the run to end and print it as `runs show`.")
    ] = False,
    timeout: Annotated[
        str, typer.Option(help="With --wait, how long to wait (30s, 5m) before giving up.")
    ] = "60s",
    output: OutputOption = None,
) -> None:
    """Run an endpoint once now, through a scheduler worker (so it waits for a run of the
    endpoint under way). Its schedule is left as it is. Prints the run's id; with --wait,
    the run, and exits 5 unless it succeeded."""
    waited = _timeout(timeout)
    settings = admin_settings()

    async def act(store: Store) -> tuple[Run, Endpoint]:
        clock = build_clock()
        queued = await with_waker(
            settings,
            lambda waker: request_run(store.unit_of_work, waker, ref, actor(), clock.now()),
        )
        current, endpoint = await show_run(store.reading, queued.id)
        held = _held_by_job(endpoint, clock.now())
        if held:
            note(
                f"queued, but it waits: {held}; `cronpilot resume {endpoint.job_name}` lets it run"
            )
        if not wait:
            return current, endpoint
        deadline = clock.now() + timedelta(seconds=waited)
        while not current.status.finished:
            if clock.now() >= deadline:
                raise RunNotFinished(current, waited, _held_by_job(endpoint, clock.now()))
            await clock.sleep(POLL_SECONDS)
            current, endpoint = await show_run(store.reading, queued.id)
        return current, endpoint

    done, endpoint = with_store(settings, act)
    if not wait:
        if output:
            view = {"id": done.id, "endpoint": endpoint.ref, "due_at": iso(done.due_at)}
            print_data(output, view)
        else:
            typer.echo(done.id)
        return
    print_run(done, endpoint, output=output)
    if done.status is not RunStatus.SUCCESS:
        raise typer.Exit(EXIT_RUN_FAILED)


def backfill(
    ref: EndpointRef,
    start: Annotated[
        str,
        typer.Option(
            "--from",
            help="First slot: RFC 3339, or YYYY-MM-DD[ HH:MM] in the endpoint's time zone.",
        ),
    ],
    end: Annotated[str, typer.Option("--to", help="Last slot, written as --from.")],
    max_slots: Annotated[
        int | None,
        typer.Option(
            "--max",
            min=1,
            max=MAX_SLOTS,
            help=f"Queue up to this many runs (default {DEFAULT_MAX_SLOTS}); more is refused.",
        ),
    ] = None,
    output: OutputOption = None,
) -> None:
    """Queue a run (trigger backfill) for each past slot of the endpoint's baseline in
    [--from, --to] that has no run, oldest first, one starting at a time at a bounded pace.
    Idempotent: slots that have a run are skipped."""
    first, last = _moment(start, "--from"), _moment(end, "--to")
    settings = admin_settings()

    async def act(store: Store) -> BackfillReport:
        return await with_waker(
            settings,
            lambda waker: request_backfill(
                store.unit_of_work,
                waker,
                ref,
                start=first,
                end=last,
                max_slots=max_slots or DEFAULT_MAX_SLOTS,
                actor=actor(),
                now=build_clock().now(),
            ),
        )

    report = with_store(settings, act)
    queued, ref_ = report.queued, report.endpoint.ref
    if output:
        print_data(
            output,
            {
                "endpoint": ref_,
                "queued": len(queued),
                "skipped": report.skipped,
                "runs": [
                    {"id": r.id, "slot_at": iso(r.slot_at), "due_at": iso(r.due_at)} for r in queued
                ],
            },
        )
        return
    typer.echo(
        f"queued {len(queued)} backfill runs of {ref_}; "
        f"skipped {report.skipped} slots that have a run"
    )
    if queued:
        now = build_clock().now()
        typer.echo(
            f"slots {iso(queued[0].slot_at)} .. {iso(queued[-1].slot_at)}; "
            f"the last starts {relative(queued[-1].due_at, now)} at the earliest"
        )


def _timeout(text: str) -> float:
    try:
        seconds = parse_duration(text)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--timeout") from None
    if not 0 < seconds <= MAX_WAIT_SECONDS:
        raise typer.BadParameter(
            f"{text!r} must be above 0 and at most {span(MAX_WAIT_SECONDS)}", param_hint="--timeout"
        )
    return seconds


def _moment(text: str, option: str) -> datetime:
    """RFC 3339 (with its offset), or a date with an optional time (`2030-01-31`,
    `2030-01-31 09:00`) without one: the endpoint's local time, decided by the use case."""
    try:
        return datetime.fromisoformat(text.strip())
    except ValueError:
        raise typer.BadParameter(
            f"{text!r} is not a time: RFC 3339 (2030-01-31T09:00:00Z), or YYYY-MM-DD[ HH:MM] "
            "in the endpoint's time zone",
            param_hint=option,
        ) from None
