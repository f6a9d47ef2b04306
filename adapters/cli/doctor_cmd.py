"""`cronpilot doctor`: is this deployment sound? One table, each line OK or what to fix."""

from __future__ import annotations

import asyncio

import typer

from cronpilot.adapters.bootstrap import build_clock
from cronpilot.adapters.cli.exit_codes import EXIT_FAILED
from cronpilot.adapters.cli.output import (
    OutputOption,
    add_row,
    new_table,
    print_data,
    print_table,
)
from cronpilot.adapters.cli.runtime import admin_settings


def doctor(output: OutputOption = None) -> None:
    """Check the deployment these settings describe: the database answers and is at the newest
    migration, the secret key is valid and opens the database's secrets, the allowed networks
    are sane, this clock agrees with the database's, a scheduler worker is alive, and the LLM
    answers (when one is configured). Exits 0 only when every check passes, else 4."""
    # Imported here: `cronpilot --help` loads this module, and the checks load Alembic and the
    # LLM client.
    from cronpilot.adapters.doctor import examine

    checks = asyncio.run(examine(admin_settings(), build_clock().now))
    if output:
        print_data(
            output,
            [{"check": c.name, "ok": c.ok, "detail": c.detail} for c in checks],
        )
    else:
        table = new_table("Check", "Result", "Detail", wrap=("Detail",))
        for check in checks:
            add_row(table, check.name, "OK" if check.ok else "FAIL", check.detail)
        print_table(table)
    if not all(check.ok for check in checks):
        raise typer.Exit(EXIT_FAILED)
