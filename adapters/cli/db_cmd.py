"""`cronpilot db …`: schema maintenance."""

from __future__ import annotations

import typer

from cronpilot.adapters.bootstrap import migrate
from cronpilot.adapters.cli.runtime import admin_settings
from cronpilot.domain.secrets import mask_url


def upgrade() -> None:
    """Create the database schema or migrate it to the newest version."""
    settings = admin_settings()
    migrate(settings)
    typer.echo(f"database schema is up to date ({mask_url(settings.database_url)})")
