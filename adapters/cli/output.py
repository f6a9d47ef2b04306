"""How the CLI speaks: JSON for scripts, rich tables for people, one line per error."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from cronpilot.domain.model import Run, Schedule
from cronpilot.domain.schedule import next_cron_fires, zone

JsonOption = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]
EndpointRef = Annotated[str, typer.Argument(help="`job/endpoint` or an endpoint id.")]

_UNITS = (("d", 86400), ("h", 3600), ("m", 60), ("s", 1))


def print_json(data: object) -> None:
    """Machine-readable output: stable keys, ISO-8601 times, nothing else on stdout."""
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def print_table(table: Table) -> None:
    Console().print(table)


def note(message: str) -> None:
    """A remark for people that must not pollute machine-readable stdout."""
    typer.echo(message, err=True)


def new_table(*columns: str) -> Table:
    """A table whose first column (the thing's name) never wraps; the others fold."""
    table = Table(show_edge=False, header_style="bold")
    for i, column in enumerate(columns):
        table.add_column(column, no_wrap=i == 0, overflow="fold")
    return table


def add_row(table: Table, *cells: str) -> None:
    """Cells as plain text: user data such as `[1, 2]` must not be read as rich markup."""
    table.add_row(*(Text(cell) for cell in cells))


def details_table(rows: Sequence[tuple[str, str]]) -> Table:
    """A two-column label/value sheet for `show` commands."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    for label, value in rows:
        table.add_row(label, Text(value))
    return table


def iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None


def span(seconds: float) -> str:
    """`90` → `1m30s`: the two largest units, which is all a person reads."""
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms" if seconds > 0 else "0s"
    rest = round(seconds)
    parts = []
    for unit, size in _UNITS:
        amount, rest = divmod(rest, size)
        if amount:
            parts.append(f"{amount}{unit}")
    return "".join(parts[:2])


def relative(moment: datetime | None, now: datetime) -> str:
    """`in 5s` / `3m ago`, with the absolute UTC time beside it."""
    if moment is None:
        return "-"
    delta = (moment - now).total_seconds()
    when = "now" if abs(delta) < 1 else f"in {span(delta)}" if delta > 0 else f"{span(-delta)} ago"
    return f"{when} ({clock_time(moment, now)})"


def clock_time(moment: datetime, now: datetime) -> str:
    """UTC wall time, with the date only when it is not today's."""
    utc = moment.astimezone(UTC)
    today = utc.date() == now.astimezone(UTC).date()
    return f"{utc:%H:%M:%S}Z" if today else f"{utc:%Y-%m-%d %H:%M:%S}Z"


def schedule_text(schedule: Schedule) -> str:
    if schedule.cron is not None:
        zone = "" if schedule.timezone == "UTC" else f" {schedule.timezone}"
        return f"cron {schedule.cron}{zone}"
    if schedule.interval_seconds is None:
        return "after its upstreams"
    return f"every {span(schedule.interval_seconds)}"


NEXT_FIRES = 3
"""How many fire times `endpoints show` and `apply` preview for a cron endpoint."""


def cron_fires(schedule: Schedule, now: datetime) -> list[datetime]:
    """The next `NEXT_FIRES` times a cron baseline fires after `now` (none for an interval)."""
    if schedule.cron is None:
        return []
    return next_cron_fires(schedule.cron, schedule.timezone, now, NEXT_FIRES)


def fire_time(moment: datetime, timezone: str) -> str:
    """`Mon 2027-01-04 09:00:00 CET (08:00:00Z)`: the zone's wall time, then UTC's."""
    local = moment.astimezone(zone(timezone))
    utc = moment.astimezone(UTC)
    shown = f"{local:%a %Y-%m-%d %H:%M:%S %Z}"
    if timezone == "UTC":
        return shown
    at_utc = f"{utc:%H:%M:%S}" if utc.date() == local.date() else f"{utc:%Y-%m-%d %H:%M:%S}"
    return f"{shown} ({at_utc}Z)"


def fires_view(fires: Sequence[datetime], timezone: str) -> list[dict[str, str]]:
    """Fire times for scripts: the instant in UTC and the zone's wall time, both ISO-8601."""
    tz = zone(timezone)
    return [
        {"at": moment.astimezone(UTC).isoformat(), "local": moment.astimezone(tz).isoformat()}
        for moment in fires
    ]


def run_status(run: Run) -> str:
    """`success 200`, `failed 503`, `abandoned`."""
    code = f" {run.status_code}" if run.status_code is not None else ""
    return f"{run.status.value}{code}"
