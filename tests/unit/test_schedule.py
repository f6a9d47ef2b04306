"""Baseline schedules: what `validate_schedule` refuses, and cron fire times across DST."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cronpilot.domain.errors import InvalidSchedule
from cronpilot.domain.model import Schedule
from cronpilot.domain.schedule.schedule import (
    MAX_SECONDS,
    baseline_period,
    next_cron_fire,
    next_cron_fires,
    validate_schedule,
)

PARIS = ZoneInfo("Europe/Paris")

INVALID: list[tuple[str, Schedule, float | None, float | None, str]] = [
    ("cron of one word", Schedule(cron="bogus"), None, None, "has 1 fields"),
    ("cron of 7 fields", Schedule(cron="* * * * * * *"), None, None, "has 7 fields"),
    ("cron minute 61", Schedule(cron="61 * * * *"), None, None, "minute field '61'"),
    ("cron weekday word", Schedule(cron="0 0 * * fun"), None, None, "day-of-week field 'fun'"),
    ("cron seconds 60", Schedule(cron="60 * * * * *"), None, None, "second field '60'"),
    ("cron hour 24", Schedule(cron="0 24 * * *"), None, None, "hour field '24' is not valid"),
    ("cron day 0", Schedule(cron="0 0 0 * *"), None, None, "day-of-month field '0'"),
    ("cron month 13", Schedule(cron="0 0 * 13 *"), None, None, "month field '13'"),
    ("cron weekday 8", Schedule(cron="0 0 * * 8"), None, None, "day-of-week field '8'"),
    ("cron weekdays to 8", Schedule(cron="0 0 * * 1-8"), None, None, "day-of-week field '1-8'"),
    ("cron step 0", Schedule(cron="*/0 * * * *"), None, None, "minute field '*/0'"),
    ("cron range backwards", Schedule(cron="0 5-1 * * *"), None, None, "hour field '5-1'"),
    ("cron range open", Schedule(cron="0 0 * * 1-"), None, None, "day-of-week field '1-'"),
    ("cron empty list item", Schedule(cron="0,,5 * * * *"), None, None, "minute field '0,,5'"),
    ("cron huge number", Schedule(cron="9" * 5000 + " * * * *"), None, None, "minute field"),
    ("cron question mark", Schedule(cron="0 0 ? * *"), None, None, "day-of-month field '?'"),
    ("L as a minute", Schedule(cron="L * * * *"), None, None, "minute field 'L'"),
    ("L as a month", Schedule(cron="0 0 * L *"), None, None, "month field 'L'"),
    ("L as a weekday", Schedule(cron="0 0 * * L"), None, None, "day-of-week field 'L'"),
    ("last Friday", Schedule(cron="0 0 * * 5L"), None, None, "day-of-week field '5L'"),
    ("second Monday", Schedule(cron="0 0 * * MON#2"), None, None, "day-of-week field 'MON#2'"),
    ("last weekday", Schedule(cron="0 0 LW * *"), None, None, "day-of-month field 'LW'"),
    ("L with a step", Schedule(cron="0 0 L/2 * *"), None, None, "day-of-month field 'L/2'"),
    ("L in a range", Schedule(cron="0 0 1-L * *"), None, None, "day-of-month field '1-L'"),
    ("cron on 30 February", Schedule(cron="0 0 30 2 *"), None, None, "never fires"),
    ("31st of short months", Schedule(cron="0 0 31 4,6,9,11 *"), None, None, "never fires"),
    ("@reboot", Schedule(cron="@reboot"), None, None, "@reboot is not a schedule"),
    ("@fortnightly", Schedule(cron="@fortnightly"), None, None, "unknown macro '@fortnightly'"),
    ("unknown macro", Schedule(cron="@every_5m"), None, None, "known: @yearly, @annually"),
    ("macro and fields", Schedule(cron="@daily 5"), None, None, "has 2 fields"),
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
        (Schedule(cron="0 0 31 2 1"), None, None),  # Mondays: either day field will do
        (Schedule(cron="0 9 * * 7"), None, None),
        (Schedule(cron="0 9 * * 0-7"), None, None),
        (Schedule(cron="0 0 L 2 *"), None, None),
        (Schedule(cron="0 0 1,15,L * *"), None, None),
        (Schedule(cron="@daily", timezone="Europe/Paris"), None, None),
        (Schedule(cron="@ANNUALLY"), None, None),
        (Schedule(cron="0 12 * jan,JUL Mon-fri"), None, None),
        (Schedule(cron="5/15 * * * *"), None, None),
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
            # 02:30 CET; 02:30 does not exist on the 29th: at 03:00 CEST, the first valid time
            # after it (the moment the clocks go forward); then 02:30 CEST.
            [utc(2026, 3, 28, 1, 30), utc(2026, 3, 29, 1), utc(2026, 3, 30, 0, 30)],
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
            [utc(2026, 3, 8, 7), utc(2026, 3, 9, 6, 30)],
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


AFTER = utc(2027, 1, 1, 10, 30)
"""A Friday."""


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        # Weekdays count from Sunday = 0 (and 7), as in every cron.
        ("0 9 * * 1-5", [utc(2027, 1, d, 9) for d in (4, 5, 6, 7, 8, 11)]),
        ("0 9 * * 1", [utc(2027, 1, 4, 9), utc(2027, 1, 11, 9)]),
        ("0 9 * * 0", [utc(2027, 1, 3, 9), utc(2027, 1, 10, 9)]),
        ("0 9 * * 7", [utc(2027, 1, 3, 9), utc(2027, 1, 10, 9)]),
        ("0 9 * * sun", [utc(2027, 1, 3, 9), utc(2027, 1, 10, 9)]),
        ("0 9 * * 5-7", [utc(2027, 1, 2, 9), utc(2027, 1, 3, 9), utc(2027, 1, 8, 9)]),
        ("30 0 9 * * 1-5", [utc(2027, 1, 4, 9, 0, 30), utc(2027, 1, 5, 9, 0, 30)]),
        ("0 12 * jan,JUL Mon",
         [*(utc(2027, 1, d, 12) for d in (4, 11, 18, 25)), utc(2027, 7, 5, 12)]),
        # Day-of-month and day-of-week both restricted: either will do.
        ("0 0 1 * 1",
         [*(utc(2027, 1, d) for d in (4, 11, 18, 25)), utc(2027, 2, 1), utc(2027, 2, 8)]),
        ("0 0 13 * fri", [utc(2027, 1, 8), utc(2027, 1, 13), utc(2027, 1, 15)]),
        # Vixie and Debian cron: a day field starting with * makes both needed (1st, 11th,
        # 21st or 31st, and a Monday).
        ("0 0 */10 * 1", [utc(2027, 1, 11), utc(2027, 2, 1), utc(2027, 3, 1), utc(2027, 5, 31)]),
        # Macros.
        ("@hourly", [utc(2027, 1, 1, 11), utc(2027, 1, 1, 12)]),
        ("@daily", [utc(2027, 1, 2), utc(2027, 1, 3)]),
        ("@midnight", [utc(2027, 1, 2), utc(2027, 1, 3)]),
        ("@weekly", [utc(2027, 1, 3), utc(2027, 1, 10)]),
        ("@monthly", [utc(2027, 2, 1), utc(2027, 3, 1)]),
        ("@yearly", [utc(2028, 1, 1), utc(2029, 1, 1)]),
        ("@annually", [utc(2028, 1, 1), utc(2029, 1, 1)]),
        # L: the last day of the month, 29 February in leap years.
        ("0 0 L * *", [utc(2027, 1, 31), utc(2027, 2, 28), utc(2027, 3, 31), utc(2027, 4, 30)]),
        ("0 0 L 2 *", [utc(2027, 2, 28), utc(2028, 2, 29), utc(2029, 2, 28)]),
        ("0 0 1,L * *", [utc(2027, 1, 31), utc(2027, 2, 1), utc(2027, 2, 28), utc(2027, 3, 1)]),
        ("0 0 29 2 *", [utc(2028, 2, 29), utc(2032, 2, 29)]),
    ],
)  # fmt: skip
def test_cron_fires_on_the_days_cron_means(expr: str, expected: list[datetime]) -> None:
    assert next_cron_fires(expr, "UTC", AFTER, len(expected)) == expected


@pytest.mark.parametrize(
    ("expr", "timezone", "after", "until", "expected"),
    [
        pytest.param(
            "0 0 1 * *", "Europe/Paris", utc(2027, 3, 1), utc(2027, 5, 1),
            [utc(2027, 3, 31, 22), utc(2027, 4, 30, 22)],
            id="no month skipped over the spring change",
        ),
        pytest.param(
            "0 0 * * *", "America/Santiago", utc(2027, 9, 3, 12), utc(2027, 9, 6, 12),
            # 5 September has no midnight (00:00 -04 becomes 01:00 -03): it runs at 01:00.
            [utc(2027, 9, 4, 4), utc(2027, 9, 5, 4), utc(2027, 9, 6, 3)],
            id="a day without midnight still runs",
        ),
        pytest.param(
            "* 2 * * *", "Europe/Paris", utc(2027, 3, 28), utc(2027, 3, 29, 0, 0, 30),
            # No 02:xx on the 28th: once at 03:00 CEST; then every minute from 02:00 CEST.
            [utc(2027, 3, 28, 1), utc(2027, 3, 29)],
            id="a skipped hour of minutes fires once",
        ),
        pytest.param(
            "0 */2 * * *", "Europe/Paris", utc(2027, 3, 27, 22, 30), utc(2027, 3, 28, 4),
            # 00:00 CET, 02:00 becomes 03:00 CEST, 04:00 CEST, 06:00 CEST.
            [utc(2027, 3, 27, 23), utc(2027, 3, 28, 1), utc(2027, 3, 28, 2), utc(2027, 3, 28, 4)],
            id="every two hours in spring",
        ),
        pytest.param(
            "0 */2 * * *", "Europe/Paris", utc(2027, 10, 30, 21, 30), utc(2027, 10, 31, 4),
            # 00:00 CEST, 02:00 CEST (not 02:00 CET again), 04:00 CET.
            [utc(2027, 10, 30, 22), utc(2027, 10, 31), utc(2027, 10, 31, 3)],
            id="every two hours in autumn",
        ),
        pytest.param(
            "15 30 2 * * *", "Europe/Paris", utc(2027, 3, 27, 12), utc(2027, 3, 29, 12),
            [utc(2027, 3, 28, 1), utc(2027, 3, 29, 0, 30, 15)],
            id="seconds field in spring",
        ),
        pytest.param(
            "0 30 2 * * *", "Europe/Paris", utc(2027, 10, 30, 12), utc(2027, 11, 1, 12),
            [utc(2027, 10, 31, 0, 30), utc(2027, 11, 1, 1, 30)],
            id="seconds field in autumn",
        ),
        pytest.param(
            "15 2 * * *", "Australia/Lord_Howe", utc(2027, 10, 1), utc(2027, 10, 4),
            # Lord Howe goes from 02:00 to 02:30 (+10:30 to +11): 02:15 runs at 02:30.
            [utc(2027, 10, 1, 15, 45), utc(2027, 10, 2, 15, 30), utc(2027, 10, 3, 15, 15)],
            id="lord howe half-hour spring",
        ),
        pytest.param(
            "45 1 * * *", "Australia/Lord_Howe", utc(2027, 4, 2), utc(2027, 4, 5),
            # 01:30 to 02:00 happens twice on the 4th (+11, then +10:30): 01:45 +11 only.
            [utc(2027, 4, 2, 14, 45), utc(2027, 4, 3, 14, 45), utc(2027, 4, 4, 15, 15)],
            id="lord howe half-hour autumn",
        ),
        pytest.param(
            "30 * * * *", "Australia/Lord_Howe", utc(2026, 4, 4, 13), utc(2026, 4, 4, 16),
            # 00:30 +11, 01:30 +11, 01:30 again +10:30 half an hour later (real time), 02:30.
            [utc(2026, 4, 4, 13, 30), utc(2026, 4, 4, 14, 30),
             utc(2026, 4, 4, 15), utc(2026, 4, 4, 16)],
            id="every hour through lord howe's autumn",
        ),
        pytest.param(
            "20,30 * * * *", "Australia/Lord_Howe", utc(2026, 4, 4, 14, 49, 59),
            utc(2026, 4, 4, 16),
            # Started at 01:49:59 +11, in the first pass: 01:30 +10:30 at 02:00 +11 (croniter
            # skips it), then 02:20 and 02:30 +10:30.
            [utc(2026, 4, 4, 15), utc(2026, 4, 4, 15, 50), utc(2026, 4, 4, 16)],
            id="every hour started in lord howe's first pass",
        ),
        pytest.param(
            "30 * * * *", "Australia/Lord_Howe", utc(2027, 10, 2, 14), utc(2027, 10, 2, 16, 30),
            # 01:30 +10:30, then 02:30 +11 right after the clocks jump from 02:00, 03:30 +11.
            [utc(2027, 10, 2, 15), utc(2027, 10, 2, 15, 30), utc(2027, 10, 2, 16, 30)],
            id="every hour through lord howe's spring",
        ),
        pytest.param(
            "45 * * * *", "Europe/Paris", utc(2027, 10, 31, 0, 50), utc(2027, 10, 31, 2, 45),
            # Started at 02:50 CEST: 02:45 comes again at 02:45 CET.
            [utc(2027, 10, 31, 1, 45), utc(2027, 10, 31, 2, 45)],
            id="every hour started in the first pass",
        ),
        pytest.param(
            "0 * * * *", "America/Santiago", utc(2027, 9, 5, 2, 30), utc(2027, 9, 5, 5),
            # 23:00 -04, no 00:00 (the clocks go to 01:00 -03), 01:00 -03, 02:00 -03.
            [utc(2027, 9, 5, 3), utc(2027, 9, 5, 4), utc(2027, 9, 5, 5)],
            id="every hour through a night without midnight",
        ),
        pytest.param(
            "30 2 * * *", "Europe/Paris", utc(2026, 10, 25, 1, 15), utc(2026, 10, 27),
            # Started at 02:15 CET, in the second pass: 02:30 CEST already fired.
            [utc(2026, 10, 26, 1, 30)],
            id="started in the second pass",
        ),
    ],
)  # fmt: skip
def test_cron_across_dst_changes(
    expr: str, timezone: str, after: datetime, until: datetime, expected: list[datetime]
) -> None:
    assert fires(expr, timezone, after, until) == expected


def test_next_cron_fires_counts_from_the_start() -> None:
    assert next_cron_fires("*/20 * * * *", "UTC", utc(2027, 1, 1), 3) == [
        utc(2027, 1, 1, 0, 20),
        utc(2027, 1, 1, 0, 40),
        utc(2027, 1, 1, 1),
    ]


CRON_TOKENS = st.sampled_from(
    ["*", "*/0", "*/5", "0", "7", "8", "60", "L", "LW", "5L", "MON#2", "1-5", "5-1", "JAN",
     "mon", "?", "W", "-", ",", "/", "@daily", "@reboot", "99999999999999999999", "1,", "L/2",
     "٣", "1-3/0", "*/", "**", "0x10", "-1", "+1", " ", "9" * 4400]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.lists(CRON_TOKENS, max_size=7).map(" ".join), st.text(max_size=30)))
def test_any_text_is_a_schedule_or_one_invalid_schedule(expr: str) -> None:
    """Never a library's exception, never a hang: a fire time or `InvalidSchedule`."""
    try:
        fire = next_cron_fire(expr, "Europe/Paris", utc(2027, 1, 1))
    except InvalidSchedule as refused:
        assert refused.reason
    else:
        assert fire > utc(2027, 1, 1)


def test_a_schedule_at_the_end_of_the_calendar_never_fires_again() -> None:
    with pytest.raises(InvalidSchedule, match="never fires again"):
        next_cron_fire("0 0 1 1 *", "UTC", datetime(9999, 6, 1, tzinfo=UTC))
