"""`cronpilot tokens …`: API tokens for the HTTP API, created (the secret shown once), listed
(never a secret nor its hash) and revoked."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from cronpilot.adapters.bootstrap import build_clock
from cronpilot.adapters.cli.identity import actor
from cronpilot.adapters.cli.output import (
    OutputOption,
    add_row,
    clock_time,
    iso,
    new_table,
    note,
    print_data,
    print_table,
)
from cronpilot.adapters.cli.runtime import admin_settings, with_store
from cronpilot.domain.access import Scope
from cronpilot.domain.tokens import ApiToken
from cronpilot.usecases.access import create_token, list_tokens, revoke_token

SHOWN_ONCE = "Keep this secret now: it is not stored, and it will not be shown again."


def create(
    name: Annotated[str, typer.Option(help="Unique among live tokens: `ci`, `grafana`.")],
    scope: Annotated[
        Scope, typer.Option(help="read reads; write also applies, pauses, runs; admin all.")
    ],
    output: OutputOption = None,
) -> None:
    """Create a token; its secret is printed this once (send it as `Authorization: Bearer`)."""
    token, secret = with_store(
        admin_settings(),
        lambda store: create_token(store.unit_of_work, name, scope, actor(), build_clock().now()),
    )
    if output:
        print_data(output, token_view(token) | {"secret": secret})
        note(SHOWN_ONCE)
        return
    typer.echo(f"created token {token.name} (scope {token.scope.value})")
    typer.echo(secret)
    typer.echo(SHOWN_ONCE)


def list_all(
    show_revoked: Annotated[
        bool, typer.Option("--all", help="Revoked tokens too, with who revoked them.")
    ] = False,
    output: OutputOption = None,
) -> None:
    """Tokens by name: scope, who created them, when last used. Never their secrets."""
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
    columns = ["Name", "Scope", "Created", "By", "Last used"]
    table = new_table(*columns, "Revoked") if show_revoked else new_table(*columns)
    for t in tokens:
        cells = [
            t.name,
            t.scope.value,
            clock_time(t.created_at, now),
            t.created_by,
            "-" if t.last_used_at is None else clock_time(t.last_used_at, now),
        ]
        if show_revoked:
            revoked = t.revoked_at
            cells.append("-" if revoked is None else f"{clock_time(revoked, now)} {t.revoked_by}")
        add_row(table, *cells)
    print_table(table)


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


def token_view(token: ApiToken) -> dict[str, Any]:
    """The `--json` shape: everything but the secret's hash."""
    return {
        "id": token.id,
        "name": token.name,
        "scope": token.scope.value,
        "created_at": iso(token.created_at),
        "created_by": token.created_by,
        "last_used_at": iso(token.last_used_at),
        "revoked_at": iso(token.revoked_at),
        "revoked_by": token.revoked_by,
    }
