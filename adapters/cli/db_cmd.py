"""`cronpilot db …`: schema maintenance."""

from __future__ import annotations

import typer

from cronpilot.adapters.bootstrap import migrate
from cronpilot.adapters.cli.runtime import admin_settings
from cronpilot.domain.access.secrets import mask_url


def upgrade() -> None:
    """Create the database schema or migrate it to the newest version, and say which revision
    it reached, from which."""
    settings = admin_settings()
    done = migrate(settings)
    where = mask_url(settings.database_url)
    if done.before == done.after:
        typer.echo(f"database schema is up to date at revision {done.after} ({where})")
    elif done.before is None:
        typer.echo(f"database schema created at revision {done.after} ({where})")
    else:
        typer.echo(
            f"database schema upgraded from revision {done.before} to {done.after} ({where})"
        )
