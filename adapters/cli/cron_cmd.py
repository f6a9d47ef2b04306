"""`cronpilot cron EXPR`: when a crontab fires, to check one before an endpoint runs on it."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import typer

from cronpilot.adapters.bootstrap import build_clock
from cronpilot.adapters.cli.output import OutputOption, add_row, new_table, print_data, print_table
from cronpilot.adapters.views.formats import span
from cronpilot.adapters.views.schedules import MAX_COUNT, fire_time, fires_view
from cronpilot.domain.errors import InvalidSchedule
from cronpilot.domain.model import Schedule
from cronpilot.domain.schedule.quiet_preview import PreviewedFire, previewed_fires
from cronpilot.domain.schedule.schedule import next_cron_fires, validate_schedule, zone


def cron(
    expression: Annotated[
        str,
        typer.Argument(help='5 fields (minute first), 6 (second first) or a macro: "@daily".'),
    ],
    *,
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
    quiet: Annotated[
        list[str] | None,
        typer.Option(
            help="A quiet window as in a jobs file, e.g. '{days: [sat, sun]}' (repeatable): "
            "the fires it removes are shown (docs/quiet-periods.md)."
        ),
    ] = None,
    output: OutputOption = None,
) -> None:
    """The next fire times of a crontab, in its zone and in UTC (docs/scheduling.md)."""
    start = build_clock().now() if after is None else _start(after, timezone)
    if quiet:
        _quiet_preview(Schedule(cron=expression, timezone=timezone), start, count, quiet, output)
        return
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


def _quiet_preview(
    schedule: Schedule, start: datetime, count: int, quiet: list[str], output: OutputOption
) -> None:
    """The next `count` fires kept under the quiet windows, with those they remove."""
    from cronpilot.adapters.jobs_file import parse_quiet

    try:
        validate_schedule(schedule)
    except InvalidSchedule as exc:
        raise typer.BadParameter(str(exc), param_hint="EXPRESSION") from None
    windows = parse_quiet(quiet, schedule, "--quiet")
    fires = previewed_fires(schedule, windows, start, count, MAX_COUNT)
    timezone = schedule.timezone
    if output:
        removed = [fire for fire in fires if fire.window is not None]
        print_data(
            output,
            {
                "cron": schedule.cron,
                "timezone": timezone,
                "after": start.isoformat(),
                "fires": fires_view([fire.at for fire in fires if fire.kept], timezone),
                "removed": [
                    view | {"quiet_until": fire.window.end.isoformat()}
                    for fire, view in zip(
                        removed, fires_view([f.at for f in removed], timezone), strict=True
                    )
                    if fire.window is not None
                ],
            },
        )
        return
    table = new_table("#", f"Fires ({timezone})", "Quiet")
    number = 0
    for group in _grouped(fires):
        first, window = group[0], group[0].window
        if window is None:
            number += 1
            add_row(table, str(number), fire_time(first.at, timezone), "-")
            continue
        shown = fire_time(first.at, timezone)
        if len(group) > 1:
            shown += f"\n… {fire_time(group[-1].at, timezone)}"
        what = "skipped" if window.skips else f"one call per {span(window.every_seconds or 0)}"
        until = fire_time(window.end, timezone)
        add_row(table, "", shown, f"{len(group)} removed ({what}) until {until}")
    print_table(table)


def _grouped(fires: list[PreviewedFire]) -> list[list[PreviewedFire]]:
    """Each kept fire alone; the removed ones of one window together."""
    groups: list[list[PreviewedFire]] = []
    for fire in fires:
        if fire.window is not None and groups and groups[-1][0].window == fire.window:
            groups[-1].append(fire)
        else:
            groups.append([fire])
    return groups
