"""jobs.yaml: jitter, catch-up and the floor (CRONPILOT_MIN_INTERVAL_SECONDS), accepted and
refused in one line."""

from __future__ import annotations

import pytest

from cronpilot.adapters.jobs_file import parse_declarations
from cronpilot.adapters.settings import load_settings
from cronpilot.domain.errors import InvalidConfig
from cronpilot.domain.model import DEFAULT_FLOOR_SECONDS, CatchUp, EndpointSpec

JOBS = """\
jobs:
  - name: shop
    endpoints:
      - name: stock
        url: https://93.184.216.34/stock
        interval: 1m
        min_interval: 10s
        max_interval: 1h
        jitter: 10s
        catch_up: none
        catch_up_window: 2h
      - name: report
        url: https://93.184.216.34/report
        cron: "*/5 * * * *"
"""
WHERE = "jobs.yaml: job 'shop' endpoint 'stock'"


def parse(text: str, floor: float = DEFAULT_FLOOR_SECONDS) -> list[EndpointSpec]:
    [declaration] = parse_declarations(text, "jobs.yaml", [], {}, floor)
    return list(declaration.endpoints)


def error_of(text: str, floor: float = DEFAULT_FLOOR_SECONDS) -> str:
    with pytest.raises(InvalidConfig) as caught:
        parse(text, floor)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_jitter_catch_up_and_the_floor_reach_the_spec() -> None:
    stock, report = parse(JOBS, floor=2)

    assert (stock.jitter_seconds, stock.catch_up, stock.catch_up_window_seconds) == (
        10.0,
        CatchUp.NONE,
        7200.0,
    )
    assert (report.jitter_seconds, report.catch_up, report.catch_up_window_seconds) == (
        None,
        CatchUp.ONE,
        86_400.0,
    )
    assert stock.floor_seconds == report.floor_seconds == 2.0


@pytest.mark.parametrize(
    ("old", "new", "floor", "expected"),
    [
        ("jitter: 10s", "jitter: 1m", 1, "field 'jitter': 60s is too wide: at most 59s"),
        ("jitter: 10s", "jitter: 2m", 1, "field 'jitter': 120s is too wide"),
        ("jitter: 10s", "jitter: 59.5s", 1, "the interval (60s) less the floor 1s"),
        ("jitter: 10s", "jitter: 0", 1, "field 'jitter': Input should be greater than 0"),
        ("jitter: 10s", "jitter: soon", 1, "field 'jitter': 'soon' is not a duration"),
        ("catch_up: none", "catch_up: all", 1, "field 'catch_up': Input should be 'one' or 'none'"),
        ("catch_up_window: 2h", "catch_up_window: -1s", 1, "field 'catch_up_window': must be 0"),
        ("catch_up_window: 2h", "catch_up_window: -1", 1, "field 'catch_up_window': Input should"),
        ("interval: 1m", "interval: 500ms", 1, "field 'interval': slots 0.5s apart are closer"),
        ("interval: 1m", "interval: 4s", 5, "than the floor 5s (CRONPILOT_MIN_INTERVAL_SECONDS)"),
        ("min_interval: 10s", "min_interval: 2s", 5, "field 'min_interval': 2s is below the floor"),
        (
            "min_interval: 10s\n        max_interval: 1h",
            "max_interval: 2s",
            5,
            "field 'max_interval': 2s is below the floor",
        ),
        ("jitter: 10s", "jitter: 56s", 5, "at most 55s, the interval (60s) less the floor 5s"),
    ],
)
def test_bad_spacing_is_one_line_naming_the_field(
    old: str, new: str, floor: float, expected: str
) -> None:
    assert old in JOBS
    message = error_of(JOBS.replace(old, new, 1), floor)

    assert message.startswith(WHERE)
    assert expected in message


def test_a_cron_firing_closer_than_the_floor_is_refused() -> None:
    every_second = JOBS.replace('"*/5 * * * *"', '"* * * * * *"')

    message = error_of(every_second, floor=5)

    assert message == (
        "jobs.yaml: job 'shop' endpoint 'report' field 'cron': slots 1s apart are closer than "
        "the floor 5s (CRONPILOT_MIN_INTERVAL_SECONDS)"
    )
    assert parse(every_second, floor=1)[1].floor_seconds == 1


def test_cron_jitter_is_bounded_by_the_shortest_gap_between_fires() -> None:
    """9:00 and 9:30 on weekdays: gaps of 30 min, 23.5 h and 71.5 h; the 30 min one counts."""
    twice = JOBS.replace('"*/5 * * * *"', '"0,30 9 * * 1-5"\n        jitter: 30m')

    message = error_of(twice)

    assert "endpoint 'report' field 'jitter': 1800s is too wide: at most 1799s" in message
    assert "the shortest gap between fires (1800s)" in message
    assert parse(twice.replace("jitter: 30m", "jitter: 29m"))[1].jitter_seconds == 1740


@pytest.mark.parametrize("field", ["jitter: 5s", "catch_up: none", "catch_up_window: 1h"])
def test_a_dependant_has_no_schedule_options(field: str) -> None:
    dependant = (
        JOBS + "      - name: after\n        url: https://93.184.216.34/after\n"
        "        depends_on: [report]\n        " + field + "\n"
    )

    message = error_of(dependant)

    assert message.startswith("jobs.yaml: job 'shop' endpoint 'after' field")
    assert "runs after its upstreams" in message


@pytest.mark.parametrize("value", ["0", "-1", "1e400", "soon"])
def test_a_bad_floor_setting_names_its_variable(
    value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CRONPILOT_MIN_INTERVAL_SECONDS", value)

    with pytest.raises(InvalidConfig, match=r"^CRONPILOT_MIN_INTERVAL_SECONDS: "):
        load_settings()


def test_the_floor_setting_defaults_to_one_second(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CRONPILOT_MIN_INTERVAL_SECONDS", raising=False)
    assert load_settings().min_interval_seconds == 1.0
    monkeypatch.setenv("CRONPILOT_MIN_INTERVAL_SECONDS", "0.25")
    assert load_settings().min_interval_seconds == 0.25
