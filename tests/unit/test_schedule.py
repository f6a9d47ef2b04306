"""Baseline schedules: what `validate_schedule` refuses, and cron fire times across DST."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from domain.errors import InvalidSchedule
from domain.model import Schedule
from domain.schedule import MAX_SECONDS, baseline_period, next_cron_fire, validate_schedule

PARIS = ZoneInfo("Europe/Paris")

INVALID: list[tuple[str, Schedule, float | None, float | None, str]] = [
    ("cron of one word", Schedule(cron="bogus"), None, None, "has 1 fields"),
    ("cron of 7 fields", Schedule(cron="* * * * * * *"), None, None, "has 7 fields"),
    ("cron minute 61", Schedule(cron="61 * * * *"), None, None, "maximum value (59)"),
    ("cron weekday word", Schedule(cron="0 0 * * fun"), None, None, "fun"),
    ("cron seconds 60", Schedule(cron="60 * * * * *"), None, None, "maximum value (59)"),
    ("cron on 30 February", Schedule(cron="0 0 30 2 *"), None, None, "never fires"),
    ("empty cron", Schedule(cron=""), None, None, "has 0 fields"),
    ("unknown zone", Schedule(cron="0 * * * *", timezone="Mars/Olympus"), None, None, "time zone"),
    ("zone folder", Schedule(interval_seconds=60, timezone="Europe"), None, None, "time zone"),
    ("zone path", Schedule(interval_seconds=60, timezone="../../etc/passwd"), None, None, "zone"),
    ("empty zone", Schedule(cron="0 * * * *", timezone=""), None, None, "unknown time zone"),
    ("interval zero", Schedule(interval_seconds=0), None, None, "interval must be between"),
    ("interval negative", Schedule(interval_seconds=-5), None, None, "interval must be between"),
    ("interval NaN", Schedule(interval_seconds=float("nan")), None, None, "interval must be"),
    ("interval inf", Schedule(interval_seconds=float("inf")), None, None, "interval must be"),
    ("interval below 1 ms", Schedule(interval_seconds=1e-7), None, None, "interval must be"),
    ("interval over 10 y", Schedule(interval_seconds=MAX_SECONDS * 2), None, None, "interval"),
    ("min negative", Schedule(interval_seconds=60), -1, None, "min interval must be"),
    ("min NaN", Schedule(interval_seconds=60), float("nan"), None, "min interval must be"),
    ("max zero", Schedule(interval_seconds=60), None, 0, "max interval must be"),
    ("max -inf", Schedule(interval_seconds=60), None, float("-inf"), "max interval must be"),
    ("min above max", Schedule(interval_seconds=60), 120, 60, "min interval is above max"),
    ("neither baseline", Schedule(), None, None, "exactly one of cron or interval"),
    (
        "both baselines",
        Schedule(cron="* * * * *", interval_seconds=60),
        None,
        None,
        "exactly one of cron or interval",
    ),
]


@pytest.mark.parametrize(
    ("schedule", "min_s", "max_s", "reason"),
    [row[1:] for row in INVALID],
    ids=[row[0] for row in INVALID],
)
def test_validate_schedule_refuses_with_a_reason(
    schedule: Schedule, min_s: float | None, max_s: float | None, reason: str
) -> None:
    with pytest.raises(InvalidSchedule) as raised:
        validate_schedule(schedule, min_s, max_s)

    assert reason in raised.value.reason
    assert raised.value.reason in str(raised.value)


@pytest.mark.parametrize(
    ("schedule", "min_s", "max_s"),
    [
        (Schedule(interval_seconds=0.001), None, None),
        (Schedule(interval_seconds=MAX_SECONDS), 1, MAX_SECONDS),
        (Schedule(interval_seconds=60), 30, 30),
        (Schedule(cron="*/5 * * * *", timezone="Europe/Paris"), 60, 3600),
        (Schedule(cron="*/15 * * * * *", timezone="America/New_York"), None, None),
        (Schedule(cron="0 9 * * mon-fri", timezone="Asia/Kolkata"), None, None),
        (Schedule(cron="0 0 29 2 *"), None, None),
    ],
)
def test_validate_schedule_accepts(
    schedule: Schedule, min_s: float | None, max_s: float | None
) -> None:
    validate_schedule(schedule, min_s, max_s)


def fires(expr: str, timezone: str, after: datetime, until: datetime) -> list[datetime]:
    """Every fire time in (after, until], in UTC."""
    found = [next_cron_fire(expr, timezone, after)]
    while found[-1] <= until:
        found.append(next_cron_fire(expr, timezone, found[-1]))
    return found[:-1]


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


@pytest.mark.parametrize(
    ("timezone", "after", "until", "expected"),
    [
        pytest.param(
            "Europe/Paris",
            utc(2026, 3, 27, 12),
            utc(2026, 3, 30, 12),
            # 02:30 CET; 02:30 does not exist on the 29th, so 03:30 CEST; then 02:30 CEST.
            [utc(2026, 3, 28, 1, 30), utc(2026, 3, 29, 1, 30), utc(2026, 3, 30, 0, 30)],
            id="paris spring forward",
        ),
        pytest.param(
            "Europe/Paris",
            utc(2026, 10, 23, 12),
            utc(2026, 10, 26, 12),
            # 02:30 CEST; 02:30 happens twice on the 25th and fires in the first pass only.
            [utc(2026, 10, 24, 0, 30), utc(2026, 10, 25, 0, 30), utc(2026, 10, 26, 1, 30)],
            id="paris fall back",
        ),
        pytest.param(
            "America/New_York",
            utc(2026, 3, 7, 12),
            utc(2026, 3, 9, 12),
            [utc(2026, 3, 8, 7, 30), utc(2026, 3, 9, 6, 30)],
            id="new york spring forward",
        ),
    ],
)
def test_daily_0230_fires_exactly_once_per_local_day(
    timezone: str, after: datetime, until: datetime, expected: list[datetime]
) -> None:
    assert fires("30 2 * * *", timezone, after, until) == expected


def test_new_york_0130_fires_once_on_the_fall_back_night() -> None:
    """01:00 to 02:00 repeats on 2026-11-01 in New York: 01:30 EDT (05:30 UTC) only."""
    found = fires("30 1 * * *", "America/New_York", utc(2026, 10, 31, 12), utc(2026, 11, 2, 12))

    assert found == [utc(2026, 11, 1, 5, 30), utc(2026, 11, 2, 6, 30)]


@pytest.mark.parametrize(
    ("expr", "step"),
    [("0 * * * *", timedelta(hours=1)), ("*/30 * * * *", timedelta(minutes=30))],
)
@pytest.mark.parametrize(
    ("timezone", "night"),
    [
        ("Europe/Paris", utc(2026, 3, 29)),
        ("Europe/Paris", utc(2026, 10, 25)),
        ("America/New_York", utc(2026, 3, 8, 4)),
        ("America/New_York", utc(2026, 11, 1, 4)),
    ],
)
def test_sub_daily_cron_neither_skips_nor_doubles_in_utc(
    expr: str, step: timedelta, timezone: str, night: datetime
) -> None:
    start = night - timedelta(hours=3)
    found = fires(expr, timezone, start - timedelta(seconds=1), night + timedelta(hours=4))

    assert found == [start + step * k for k in range(len(found))]
    assert len(found) == 7 * timedelta(hours=1) // step + 1


def test_hourly_job_reads_two_o_clock_twice_when_paris_falls_back() -> None:
    found = fires("0 * * * *", "Europe/Paris", utc(2026, 10, 24, 23, 30), utc(2026, 10, 25, 2))

    local = [fire.astimezone(PARIS).strftime("%H:%M%z") for fire in found]
    assert local == ["02:00+0200", "02:00+0100", "03:00+0100"]


def test_six_field_cron_counts_seconds() -> None:
    found = fires("*/15 * * * * *", "UTC", utc(2026, 1, 1), utc(2026, 1, 1, 0, 1))

    assert found == [utc(2026, 1, 1, 0, 0, 15 * k) for k in range(1, 4)] + [utc(2026, 1, 1, 0, 1)]


def test_six_field_cron_in_a_time_zone() -> None:
    assert next_cron_fire("30 0 9 * * *", "Asia/Kolkata", utc(2026, 1, 1)) == utc(
        2026, 1, 1, 3, 30, 30
    )


@pytest.mark.parametrize(
    "after", [utc(2026, 1, 1, 10), utc(2026, 1, 1, 10) + timedelta(microseconds=1)]
)
def test_next_fire_is_strictly_after(after: datetime) -> None:
    assert next_cron_fire("0 * * * *", "UTC", after) == utc(2026, 1, 1, 11)


def test_next_fire_from_a_non_utc_instant_is_the_same_instant() -> None:
    paris_noon = utc(2026, 6, 1, 10).astimezone(PARIS)

    assert next_cron_fire("0 * * * *", "UTC", paris_noon) == utc(2026, 6, 1, 11)


@pytest.mark.parametrize(
    ("schedule", "period"),
    [
        (Schedule(interval_seconds=90), timedelta(seconds=90)),
        (Schedule(cron="*/10 * * * *"), timedelta(minutes=10)),
        (Schedule(cron="0 9 * * 1", timezone="Europe/Paris"), timedelta(days=7)),
        # The night the clocks go forward the daily gap is 23 h.
        (Schedule(cron="0 12 * * *", timezone="Europe/Paris"), timedelta(hours=23)),
    ],
)
def test_baseline_period(schedule: Schedule, period: timedelta) -> None:
    assert baseline_period(schedule, utc(2026, 3, 28, 10)) == period
