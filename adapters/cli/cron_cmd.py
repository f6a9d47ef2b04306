"""`cronpilot cron EXPR`: when a crontab fires, to check one before an endpoint runs on it."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import typer

from cronpilot.adapters.bootstrap import build_clock
from cronpilot.adapters.cli.output import (
    OutputOption,
    add_row,
    fire_time,
    fires_view,
    new_table,
    print_data,
    print_table,
)
from cronpilot.domain.schedule import next_cron_fires, zone

MAX_COUNT = 1000


def cron(
    expression: Annotated[
        str,
        typer.Argument(help='5 fields (minute first), 6 (second first) or a macro: "@daily".'),
    ],
    timezone: Annotated[
        str, typer.Option(help="The zone whose wall clock the crontab reads, as in a jobs file.")
    ] = "UTC",
    count: Annotated[int, typer.Option(min=1, max=MAX_COUNT, help="How many fire times.")] = 5,
    after: Annotated[
        str | None,
        typer.Option(
            help="Start from this ISO-8601 time instead of now (in --timezone without an offset)."
        ),
    ] = None,
    output: OutputOption = None,
) -> None:
    """The next fire times of a crontab, in its zone and in UTC (docs/scheduling.md)."""
    start = build_clock().now() if after is None else _start(after, timezone)
    fires = next_cron_fires(expression, timezone, start, count)
    if output:
        print_data(
            output,
            {
                "cron": expression,
                "timezone": timezone,
                "after": start.isoformat(),
                "fires": fires_view(fires, timezone),
            },
        )
        return
    table = new_table("#", f"Fires ({timezone})")
    for number, moment in enumerate(fires, start=1):
        add_row(table, str(number), fire_time(moment, timezone))
    print_table(table)


def _start(text: str, timezone: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise typer.BadParameter(
            f"{text!r} is not an ISO-8601 time", param_hint="--after"
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=zone(timezone))
