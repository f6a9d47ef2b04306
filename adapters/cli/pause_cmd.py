"""`cronpilot pause` / `cronpilot resume`: an admin's hand on one endpoint's schedule."""

from __future__ import annotations

from datetime import MAXYEAR, UTC, datetime
from typing import Annotated

import typer

from cronpilot.adapters.bootstrap import build_clock
from cronpilot.adapters.cli.identity import actor, who_am_i
from cronpilot.adapters.cli.output import EndpointRef, OutputOption, print_data, relative
from cronpilot.adapters.cli.runtime import admin_settings, with_store, with_waker
from cronpilot.adapters.cli.views import endpoint_view
from cronpilot.adapters.durations import parse_duration
from cronpilot.domain.errors import InvalidConfig
from cronpilot.domain.excerpt import excerpt
from cronpilot.domain.model import Endpoint, Pause
from cronpilot.domain.pauses import NOT_FUTURE, TOO_FAR, pause_end, pause_end_after
from cronpilot.domain.ports import Store
from cronpilot.usecases.schedule import pause_endpoint, resume_endpoint


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


def default_reason() -> str:
    """Who paused, for whoever finds the endpoint paused: `paused by ann@web-1 from the CLI`."""
    return f"paused by {who_am_i()} from the CLI"


def pause(
    ref: EndpointRef,
    until: Annotated[
        str | None,
        typer.Option(
            help="A duration (30m, 2h) or an ISO time (2030-01-31T09:00, in this machine's "
            "local zone unless it names one: Z, +01:00); without it, until resumed."
        ),
    ] = None,
    reason: Annotated[
        str | None,
        typer.Option(help="Why, for whoever looks next; default: who paused, from where."),
    ] = None,
    output: OutputOption = None,
) -> None:
    """Stop an endpoint's runs until a time (at most ten years ahead), or until `resume`."""
    now = build_clock().now()
    why = " ".join((reason or "").split()) or default_reason()
    stop = Pause(reason=why, until=parse_until(until, now) if until is not None else None)
    endpoint = with_store(
        admin_settings(), lambda store: pause_endpoint(store.unit_of_work, ref, stop, actor(), now)
    )
    if output:
        print_data(output, endpoint_view(endpoint, None))
        return
    how_long = "until resumed" if stop.until is None else f"resumes {relative(stop.until, now)}"
    typer.echo(f"paused {endpoint.ref}, {how_long}: {why}")


def resume(ref: EndpointRef, output: OutputOption = None) -> None:
    """Lift a pause; the endpoint is re-planned from its baseline and hints."""
    settings = admin_settings()

    async def act(store: Store) -> Endpoint:
        return await with_waker(
            settings,
            lambda waker: resume_endpoint(
                store.unit_of_work, waker, ref, actor(), build_clock().now()
            ),
        )

    endpoint = with_store(settings, act)
    if output:
        print_data(output, endpoint_view(endpoint, None))
        return
    when = relative(endpoint.next_run_at, build_clock().now())
    typer.echo(f"resumed {endpoint.ref}; next run {when} ({endpoint.next_run_source.value})")
