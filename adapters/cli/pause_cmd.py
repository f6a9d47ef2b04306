"""`cronpilot pause` / `cronpilot resume`: an admin's hand on one endpoint's schedule, or on a
whole job's (a ref without `/` names a job; an endpoint id is still taken when no job has that
name)."""

from __future__ import annotations

from datetime import MAXYEAR, UTC, datetime
from typing import Annotated, Any

import typer

from cronpilot.adapters.bootstrap import build_clock
from cronpilot.adapters.cli import completion
from cronpilot.adapters.cli.identity import actor, who_am_i
from cronpilot.adapters.cli.output import OutputOption, print_data
from cronpilot.adapters.cli.runtime import admin_settings, with_store, with_waker
from cronpilot.adapters.durations import parse_duration
from cronpilot.adapters.views.catalog import endpoint_view, job_pause_view
from cronpilot.adapters.views.formats import relative
from cronpilot.domain.errors import EndpointNotFound, InvalidConfig, JobNotFound
from cronpilot.domain.model import Endpoint, Job, Pause
from cronpilot.domain.ports import Store
from cronpilot.domain.runs.excerpt import excerpt
from cronpilot.domain.schedule.pauses import NOT_FUTURE, TOO_FAR, pause_end, pause_end_after
from cronpilot.usecases.queries.catalog import job_named
from cronpilot.usecases.schedule import pause_endpoint, pause_job, resume_endpoint, resume_job

Ref = Annotated[
    str,
    typer.Argument(
        help="A job's name (every endpoint of it), `job/endpoint` or an endpoint id.",
        autocompletion=completion.graph_nodes,
    ),
]


def parse_until(text: str, now: datetime) -> datetime:
    """A duration from now (`30m`, `2h`) or an ISO-8601 time (this machine's local time when it
    names no zone, as a person at the keyboard means it), bounded by `pause_end` as through
    every other interface."""
    try:
        return _bounded(text, now)
    except InvalidConfig as error:
        raise _until_error(text, error.reason) from None


def _bounded(text: str, now: datetime) -> datetime:
    try:
        seconds = parse_duration(text)
    except ValueError:
        return pause_end(_iso_time(text), now)
    return pause_end_after(seconds, now, "--until")


def _iso_time(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise _until_error(text, "is neither a duration (30m, 2h) nor an ISO time") from None
    try:
        # A naive time is read in the local zone (TZ, else the system's) by `astimezone`.
        return moment.astimezone(UTC)
    except (OverflowError, ValueError):
        # Only the calendar's first and last days can leave it when shifted to UTC.
        far = moment.year == MAXYEAR
        raise _until_error(text, TOO_FAR if far else NOT_FUTURE) from None


def _until_error(text: str, reason: str) -> typer.BadParameter:
    return typer.BadParameter(f"{excerpt(repr(text))} {reason}", param_hint="--until")


def parse_for(text: str, now: datetime) -> datetime:
    """A duration from now (`30m`, `2h`), bounded by `pause_end_after`."""
    try:
        return pause_end_after(parse_duration(text), now, "--for")
    except ValueError:
        raise typer.BadParameter(
            f"{excerpt(repr(text))} is not a duration (30m, 2h)", param_hint="--for"
        ) from None
    except InvalidConfig as error:
        raise typer.BadParameter(
            f"{excerpt(repr(text))} {error.reason}", param_hint="--for"
        ) from None


def _pause_end(until: str | None, for_: str | None, now: datetime) -> datetime | None:
    if until is not None and for_ is not None:
        raise typer.BadParameter("give --until or --for, not both", param_hint="--for")
    if for_ is not None:
        return parse_for(for_, now)
    return None if until is None else parse_until(until, now)


def _not_found(ref: str, error: EndpointNotFound) -> EndpointNotFound | JobNotFound:
    """A ref without `/` that named neither a job nor an endpoint id: say there is no job."""
    return JobNotFound(ref) if "/" not in ref else error


def default_reason() -> str:
    """Who paused, for whoever finds the endpoint paused: `paused by ann@web-1 from the CLI`."""
    return f"paused by {who_am_i()} from the CLI"


def pause(
    ref: Ref,
    until: Annotated[
        str | None,
        typer.Option(
            help="A duration (30m, 2h) or an ISO time (2030-01-31T09:00, in this machine's "
            "local zone unless it names one: Z, +01:00); without it, until resumed."
        ),
    ] = None,
    for_: Annotated[
        str | None,
        typer.Option("--for", help="How long, from now (30m, 2h, 7d): as --until DURATION."),
    ] = None,
    reason: Annotated[
        str | None,
        typer.Option(help="Why, for whoever looks next; default: who paused, from where."),
    ] = None,
    output: OutputOption = None,
) -> None:
    """Stop an endpoint's runs, or every endpoint's of a job, until a time (at most ten years
    ahead) or until `resume`. A job's pause keeps its endpoints' own pauses underneath."""
    now = build_clock().now()
    why = " ".join((reason or "").split()) or default_reason()
    stop = Pause(reason=why, until=_pause_end(until, for_, now))

    async def act(store: Store) -> Job | Endpoint:
        if await job_named(store.reading, ref) is not None:
            return await pause_job(store.unit_of_work, ref, stop, actor(), now)
        try:
            return await pause_endpoint(store.unit_of_work, ref, stop, actor(), now)
        except EndpointNotFound as error:
            raise _not_found(ref, error) from None

    paused = with_store(admin_settings(), act)
    if output:
        print_data(output, _view(paused))
        return
    how_long = "until resumed" if stop.until is None else f"resumes {relative(stop.until, now)}"
    what = f"job {paused.name}" if isinstance(paused, Job) else paused.ref
    typer.echo(f"paused {what}, {how_long}: {why}")


def resume(ref: Ref, output: OutputOption = None) -> None:
    """Lift a pause; an endpoint is re-planned from its baseline and hints, a job's endpoints
    run again as their own pauses and plans say."""
    settings = admin_settings()

    async def act(store: Store) -> Job | Endpoint:
        now = build_clock().now()
        if await job_named(store.reading, ref) is not None:
            return await with_waker(
                settings, lambda waker: resume_job(store.unit_of_work, waker, ref, actor(), now)
            )
        try:
            return await with_waker(
                settings,
                lambda waker: resume_endpoint(store.unit_of_work, waker, ref, actor(), now),
            )
        except EndpointNotFound as error:
            raise _not_found(ref, error) from None

    resumed = with_store(settings, act)
    if output:
        print_data(output, _view(resumed))
        return
    if isinstance(resumed, Job):
        typer.echo(f"resumed job {resumed.name}")
        return
    when = relative(resumed.next_run_at, build_clock().now())
    typer.echo(f"resumed {resumed.ref}; next run {when} ({resumed.next_run_source.value})")


def _view(paused: Job | Endpoint) -> dict[str, Any]:
    return job_pause_view(paused) if isinstance(paused, Job) else endpoint_view(paused, None)
