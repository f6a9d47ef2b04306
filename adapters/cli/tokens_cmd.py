"""`cronpilot tokens …`: API tokens for the HTTP API, created (the secret shown once), listed
(never a secret nor its hash), rotated (a new secret shown once, the old one kept for a grace)
and revoked."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated

import typer

from cronpilot.adapters.bootstrap import build_clock
from cronpilot.adapters.cli.identity import actor
from cronpilot.adapters.cli.output import (
    OutputOption,
    add_row,
    new_table,
    note,
    print_data,
    print_table,
)
from cronpilot.adapters.cli.runtime import admin_settings, with_store
from cronpilot.adapters.durations import parse_duration
from cronpilot.adapters.views.formats import clock_time, relative
from cronpilot.adapters.views.tokens import token_view
from cronpilot.domain.access.access import Scope
from cronpilot.domain.access.tokens import DEFAULT_GRACE, ApiToken
from cronpilot.domain.runs.excerpt import excerpt
from cronpilot.usecases.access import create_token, list_tokens, revoke_token, rotate_token

SHOWN_ONCE = "Keep this secret now: it is not stored, and it will not be shown again."


def parse_expiry(text: str, now: datetime) -> datetime:
    """`--expires`: a duration from now (`90d`, `12h`) or an ISO-8601 time (this machine's
    local time when it names no zone). Whether it is in the future is the use case's rule."""
    try:
        seconds = parse_duration(text)
    except ValueError:
        try:
            return datetime.fromisoformat(text).astimezone(UTC)
        except (ValueError, OverflowError):
            raise _bad(
                text, "is neither a duration (90d, 12h) nor an ISO time", "--expires"
            ) from None
    try:
        return now + timedelta(seconds=seconds)
    except OverflowError:
        raise _bad(text, "is too far ahead", "--expires") from None


def parse_grace(text: str) -> timedelta:
    """`--grace`: a duration (`1h`, `0s`); its bounds are the domain's."""
    try:
        return timedelta(seconds=parse_duration(text))
    except (ValueError, OverflowError):
        raise _bad(text, "is not a duration (30m, 1h, 0s)", "--grace") from None


def parse_jobs(text: str) -> list[str]:
    """`--jobs etl,billing`: names, commas between; each must exist (the use case checks)."""
    return [job.strip() for job in text.split(",") if job.strip()]


def _bad(text: str, reason: str, option: str) -> typer.BadParameter:
    return typer.BadParameter(f"{excerpt(repr(text))} {reason}", param_hint=option)


def create(
    name_argument: Annotated[
        str | None,
        typer.Argument(metavar="NAME", help="Unique among live tokens: `ci`, `grafana`."),
    ] = None,
    *,
    name: Annotated[str | None, typer.Option(help="The name, as an option.")] = None,
    scope: Annotated[
        Scope, typer.Option(help="read reads; write also applies, pauses, runs; admin all.")
    ] = Scope.READ,
    expires: Annotated[
        str | None,
        typer.Option(help="When it stops working: a duration from now (90d) or an ISO time."),
    ] = None,
    jobs: Annotated[
        str | None,
        typer.Option(help="The only jobs it reaches, commas between (etl,billing)."),
    ] = None,
    output: OutputOption = None,
) -> None:
    """Create a token; its secret is printed this once (send it as `Authorization: Bearer`)."""
    chosen = _one_name(name_argument, name)
    now = build_clock().now()
    expires_at = None if expires is None else parse_expiry(expires, now)
    reached = None if jobs is None else parse_jobs(jobs)
    token, secret = with_store(
        admin_settings(),
        lambda store: create_token(
            store.unit_of_work, chosen, scope, actor(), now, expires_at=expires_at, jobs=reached
        ),
    )
    if output:
        print_data(output, token_view(token) | {"secret": secret})
        note(SHOWN_ONCE)
        return
    typer.echo(f"created token {token.name} ({_terms(token, now)})")
    typer.echo(secret)
    typer.echo(SHOWN_ONCE)


def _one_name(argument: str | None, option: str | None) -> str:
    if argument is not None and option is not None and argument != option:
        raise typer.BadParameter(
            f"NAME {argument!r} and --name {option!r} differ", param_hint="NAME"
        )
    chosen = argument or option
    if chosen is None:
        raise typer.BadParameter("give the token a name: tokens create NAME", param_hint="NAME")
    return chosen


def _terms(token: ApiToken, now: datetime) -> str:
    jobs = "every job" if token.jobs is None else "jobs " + ",".join(sorted(token.jobs))
    expiry = (
        "never expires"
        if token.expires_at is None
        else "expires " + relative(token.expires_at, now)
    )
    return f"scope {token.scope.value}, {jobs}, {expiry}"


def list_all(
    show_revoked: Annotated[
        bool, typer.Option("--all", help="Revoked tokens too, with who revoked them.")
    ] = False,
    output: OutputOption = None,
) -> None:
    """Tokens by name: scope, jobs, expiry, who created them, when last used. Never secrets."""
    tokens = with_store(
        admin_settings(),
        lambda store: list_tokens(store.reading, include_revoked=show_revoked),
    )
    if output:
        print_data(output, [token_view(t) for t in tokens])
        return
    if not tokens:
        note("no tokens")
        return
    now = build_clock().now()
    columns = ["Name", "Scope", "Jobs", "Expires", "Created", "By", "Last used"]
    table = new_table(*columns, "Revoked") if show_revoked else new_table(*columns)
    for t in tokens:
        cells = [
            t.name,
            t.scope.value,
            "all" if t.jobs is None else ",".join(sorted(t.jobs)),
            _expiry_cell(t, now),
            clock_time(t.created_at, now),
            t.created_by,
            "-" if t.last_used_at is None else clock_time(t.last_used_at, now),
        ]
        if show_revoked:
            revoked = t.revoked_at
            cells.append("-" if revoked is None else f"{clock_time(revoked, now)} {t.revoked_by}")
        add_row(table, *cells)
    print_table(table)


def _expiry_cell(token: ApiToken, now: datetime) -> str:
    if token.expires_at is None:
        return "never"
    if token.expires_at <= now:
        return f"expired {clock_time(token.expires_at, now)}"
    return clock_time(token.expires_at, now)


def rotate(
    name: Annotated[str, typer.Argument(help="The live token's name (or its id).")],
    grace: Annotated[
        str,
        typer.Option(help="How long the old secret still works (0s: refused at once)."),
    ] = f"{int(DEFAULT_GRACE.total_seconds())}s",
    output: OutputOption = None,
) -> None:
    """A new secret for a token, printed this once; the old one works for --grace more."""
    span = parse_grace(grace)
    now = build_clock().now()
    token, secret = with_store(
        admin_settings(),
        lambda store: rotate_token(store.unit_of_work, name, actor(), now, span),
    )
    if output:
        print_data(output, token_view(token) | {"secret": secret})
        note(SHOWN_ONCE)
        return
    until = (
        "is refused from now on"
        if token.previous_until is None or span == timedelta(0)
        else f"works until {clock_time(token.previous_until, now)}"
    )
    typer.echo(f"rotated token {token.name}: the old secret {until}")
    typer.echo(secret)
    typer.echo(SHOWN_ONCE)


def revoke(
    name: Annotated[str, typer.Argument(help="The live token's name (or its id).")],
    output: OutputOption = None,
) -> None:
    """Revoke a token: requests with its secret are refused from now on."""
    token = with_store(
        admin_settings(),
        lambda store: revoke_token(store.unit_of_work, name, actor(), build_clock().now()),
    )
    if output:
        print_data(output, token_view(token))
        return
    typer.echo(f"revoked token {token.name} (scope {token.scope.value})")
