"""`cronpilot apply` under the floor (CRONPILOT_MIN_INTERVAL_SECONDS), with jitter and catch-up,
as a user runs it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.e2e.conftest import Cli

JOBS = """\
jobs:
  - name: feeds
    endpoints:
      - name: ticks
        url: https://93.184.216.34/ticks
        cron: "* * * * * *"
      - name: prices
        url: https://93.184.216.34/prices
        interval: 1m
        jitter: 10s
        catch_up: none
        catch_up_window: 1h
"""


def test_a_cron_under_the_floor_exits_2_in_one_line_and_writes_nothing(
    cli_for: Callable[..., Cli], sqlite_url: str, tmp_path: Path
) -> None:
    cli = cli_for(sqlite_url, CRONPILOT_MIN_INTERVAL_SECONDS="5")

    stderr = cli.apply_in(tmp_path, JOBS, expect=2)

    assert stderr.splitlines() == [
        f"error: {tmp_path / 'jobs.yaml'}: job 'feeds' endpoint 'ticks' field 'cron': slots 1s "
        "apart are closer than the floor 5s (CRONPILOT_MIN_INTERVAL_SECONDS)"
    ]
    assert cli.json("jobs", "list") == []


def test_jitter_at_the_interval_exits_2(
    cli_for: Callable[..., Cli], sqlite_url: str, tmp_path: Path
) -> None:
    cli = cli_for(sqlite_url)

    stderr = cli.apply_in(tmp_path, JOBS.replace("jitter: 10s", "jitter: 1m"), expect=2)

    assert "endpoint 'prices' field 'jitter': 60s is too wide: at most 59s" in stderr
    assert len(stderr.splitlines()) == 1


def test_the_floor_is_stamped_and_a_new_floor_updates_the_endpoints(
    cli_for: Callable[..., Cli], sqlite_url: str, tmp_path: Path
) -> None:
    cli_for(sqlite_url).apply_in(tmp_path, JOBS)
    prices = cli_for(sqlite_url).json("endpoints", "show", "feeds/prices")
    assert (prices["floor_seconds"], prices["jitter_seconds"], prices["catch_up"]) == (
        1.0,
        10.0,
        "none",
    )
    assert prices["catch_up_window_seconds"] == 3600.0
    assert prices["next_slot_at"] <= prices["next_run_at"]

    lower = cli_for(sqlite_url, CRONPILOT_MIN_INTERVAL_SECONDS="0.5")
    stdout = lower.apply_in(tmp_path, JOBS)

    assert "updated   feeds/prices" in stdout and "updated   feeds/ticks" in stdout
    assert lower.json("endpoints", "show", "feeds/ticks")["floor_seconds"] == 0.5
    shown = lower("endpoints", "show", "feeds/prices").stdout
    assert "jitter 10s, catch up none within 1h, floor 500ms" in shown
