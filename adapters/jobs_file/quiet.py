"""`quiet:` in a jobs document (docs/quiet-periods.md): the windows' models, their field types
(day names and ranges, `HH:MM-HH:MM` hours) and the declared windows, checked
(`domain.schedule.quiet`).

    quiet:
      - {cron: "0 18 * * 1-5", for: 14h, timezone: Europe/Paris}
      - {days: [sat, sun]}
      - {days: mon-fri, hours: "12:00-13:00", every: 10m}   # slowed, not skipped
      - {dates: [2026-12-25, 2027-01-01]}
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime
from typing import Annotated, Literal

import yaml
from pydantic import BeforeValidator, Field, ValidationError

from cronpilot.adapters.jobs_file.fields import Strict, Watch
from cronpilot.adapters.jobs_file.locations import Issue, Loc
from cronpilot.domain.errors import InvalidConfig, InvalidSchedule
from cronpilot.domain.model import Schedule
from cronpilot.domain.schedule.quiet import (
    MINUTES_A_DAY,
    WEEKDAYS,
    QuietWindow,
    check_coverage,
    check_windows,
)
from cronpilot.domain.schedule.schedule import parse_cron, zone

MAX_WINDOWS = 20
_MAX_DATES = 400
_CLOCK = re.compile(r"(\d{1,2}):(\d{2})")
_SINCE = datetime(2026, 1, 1, tzinfo=UTC)
"""Where the checks that a window ends and leaves a slot start from: the windows repeat, and
dated ones are checked from their first date."""


_FULL_NAMES = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


def _day(name: str) -> int:
    key = name.strip().lower()
    for number, names in enumerate(zip(WEEKDAYS, _FULL_NAMES, strict=True)):
        if key in names:
            return number
    raise ValueError(f"unknown day {name!r}: use {', '.join(WEEKDAYS)} or a range (mon-fri)")


def _days(value: object) -> list[int]:
    """`[sat, sun]`, `mon-fri` or `[mon, wed-fri]` as weekday numbers (0 is Monday); a range
    may wrap (`fri-mon`)."""
    items = value if isinstance(value, list) else [value]
    days: list[int] = []
    for item in items:
        if not isinstance(item, str):
            raise ValueError(f"expected day names such as mon or a range mon-fri, not {item!r}")
        first, _, last = item.partition("-")
        start = _day(first)
        end = _day(last) if last else start
        days += [(start + n) % 7 for n in range((end - start) % 7 + 1)]
    return sorted(set(days))


def _minute(text: str, *, end: bool) -> int:
    match = _CLOCK.fullmatch(text.strip())
    hour, minute = (int(part) for part in match.groups()) if match else (-1, -1)
    if match is None or minute > 59 or hour > 24 or (hour == 24 and (minute or not end)):
        raise ValueError(f"{text!r} is not a time of day (HH:MM, 24:00 for the end of a day)")
    return hour * 60 + minute


def _hours(value: object) -> tuple[int, int]:
    """`"18:00-08:00"` as minutes of the day; an end at or before the start is the next day."""
    if not isinstance(value, str) or value.count("-") != 1:
        raise ValueError('expected hours as "HH:MM-HH:MM", e.g. "18:00-08:00"')
    first, last = value.split("-")
    start, end = _minute(first, end=False), _minute(last, end=True)
    if start == end % MINUTES_A_DAY:
        raise ValueError("hours that start and end at the same time last 0 or 24 hours")
    return start, end


Days = Annotated[list[int], BeforeValidator(_days)]
Hours = Annotated[tuple[int, int], BeforeValidator(_hours)]
Every = Watch
"""A duration above 0 (`-1h` and `0s` refused as such), at most ten years."""


class QuietConfig(Strict):
    cron: str | None = None
    for_: Every | None = Field(default=None, alias="for")
    days: Days | None = None
    hours: Hours | None = None
    dates: list[date] | None = Field(default=None, min_length=1, max_length=_MAX_DATES)
    timezone: str | None = None
    action: Literal["skip"] | None = None
    every: Every | None = None


Quiet = Annotated[list[QuietConfig], Field(max_length=MAX_WINDOWS)]


def _checked(loc: Loc, check: Callable[[], object]) -> None:
    """`check()`, its `InvalidSchedule` an `Issue` at `loc` (`guards.guard_call`, which the
    schema importing this module cannot import)."""
    try:
        check()
    except InvalidSchedule as exc:
        raise Issue(loc, str(exc)) from exc


def _window(config: QuietConfig, timezone: str, loc: Loc) -> QuietWindow:
    if config.cron is not None:
        if config.days is not None or config.hours is not None or config.dates is not None:
            raise Issue((*loc, "cron"), "a cron window takes 'for', not days, hours or dates")
        if config.for_ is None:
            raise Issue((*loc, "for"), "a cron window needs 'for', how long it lasts (e.g. 14h)")
        _checked((*loc, "cron"), lambda: parse_cron(str(config.cron)))
    elif config.for_ is not None:
        raise Issue((*loc, "for"), "applies to a cron window only")
    if config.days is not None and config.dates is not None:
        raise Issue((*loc, "dates"), "set days or dates, not both")
    if config.cron is None and config.days is None and config.dates is None and not config.hours:
        raise Issue(loc, "set cron and for, days, dates or hours")
    if config.action is not None and config.every is not None:
        raise Issue((*loc, "every"), "set action: skip or every, not both")
    if config.timezone is not None:
        _checked((*loc, "timezone"), lambda: zone(str(config.timezone)))
    return QuietWindow(
        timezone=config.timezone or timezone,
        cron=config.cron,
        duration_seconds=config.for_,
        days=tuple(config.days or ()),
        hours=config.hours,
        dates=tuple(sorted(set(config.dates or ()))),
        every_seconds=config.every,
    )


def quiet_windows(
    configs: Sequence[QuietConfig] | None, schedule: Schedule, loc: Loc
) -> tuple[QuietWindow, ...]:
    """The declared windows of an endpoint with this baseline (a zone a window does not name
    is the baseline's), refused when one never ends or they hold every slot."""
    if not configs:
        return ()
    windows = tuple(
        _window(config, schedule.timezone, (*loc, i)) for i, config in enumerate(configs)
    )
    _checked(loc, lambda: check_windows(windows, _SINCE))
    _checked(loc, lambda: check_coverage(windows, schedule, _SINCE))
    return windows


def parse_quiet(texts: Sequence[str], schedule: Schedule, where: str) -> tuple[QuietWindow, ...]:
    """Windows each written as a YAML mapping (`{days: [sat, sun]}`), checked as in a jobs
    file; raises `InvalidConfig(where, …)` in one line."""
    configs = []
    try:
        for i, text in enumerate(texts):
            try:
                value = yaml.safe_load(text)
                if not isinstance(value, dict):
                    raise Issue((i,), _NOT_A_WINDOW)
                configs.append(QuietConfig.model_validate(value))
            except (yaml.YAMLError, ValidationError) as exc:
                raise Issue((i,), _reason(exc)) from exc
        return quiet_windows(configs, schedule, ())
    except Issue as problem:
        place = "".join(
            f"[{part}]" if isinstance(part, int) else f".{part}" for part in problem.loc
        )
        raise InvalidConfig(f"{where}{place}", problem.reason) from problem


def _reason(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        error = exc.errors(include_url=False)[0]
        field = ".".join(str(part) for part in error["loc"])
        message = str(error["ctx"]["error"]) if error["type"] == "value_error" else error["msg"]
        return f"{field}: {message}" if field else message
    return _NOT_A_WINDOW


_NOT_A_WINDOW = "expected a YAML mapping such as '{days: [sat, sun]}'"
