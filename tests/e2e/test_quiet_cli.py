"""Quiet periods from the command line, as a process: `cron --quiet` previews the fires the
windows remove (no database needed), `apply` refuses a bad window in one line, and
`endpoints show` names the next window."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from tests.e2e.conftest import Cli
from tests.e2e.test_admin_cli import one_error_line, write_jobs
from tests.e2e.test_cron_cli import NOWHERE

JOBS = """\
jobs:
  - name: shop
    quiet: [{days: [sat, sun]}]
    endpoints:
      - name: stock
        url: http://127.0.0.1:9/stock
        cron: "0 9 * * *"
        timezone: Europe/Paris
"""


def test_cron_previews_the_fires_quiet_windows_remove(cli_for: Callable[..., Cli]) -> None:
    preview = cli_for(NOWHERE)
    args = ("cron", "0 9 * * *", "--timezone", "Europe/Paris", "--after", "2027-01-01T10:00")
    weekends = ("--quiet", "{days: [sat, sun]}", "--quiet", "{dates: [2027-01-04]}")

    shown = preview.json(*args, "--count", "3", *weekends)
    table = preview(*args, "--count", "1", *weekends).stdout

    kept = [fire["local"] for fire in shown["fires"]]
    assert kept == [
        "2027-01-05T09:00:00+01:00",
        "2027-01-06T09:00:00+01:00",
        "2027-01-07T09:00:00+01:00",
    ]
    removed = [(fire["local"], fire["quiet_until"]) for fire in shown["removed"]]
    assert removed == [
        ("2027-01-02T09:00:00+01:00", "2027-01-04T23:00:00+00:00"),
        ("2027-01-03T09:00:00+01:00", "2027-01-04T23:00:00+00:00"),
        ("2027-01-04T09:00:00+01:00", "2027-01-04T23:00:00+00:00"),
    ]
    assert "3 removed (skipped) until Tue 2027-01-05 00:00:00 CET" in table


def test_a_window_that_never_ends_is_refused_in_one_line(
    cli_for: Callable[..., Cli], sqlite_url: str, tmp_path: Path
) -> None:
    preview = cli_for(NOWHERE)
    shop = cli_for(sqlite_url, CRONPILOT_ALLOWED_NETWORKS="127.0.0.1/32")
    endless = JOBS.replace("days: [sat, sun]", "days: mon-sun")

    said = preview("cron", "0 9 * * *", "--quiet", "{days: [funday]}", expect=2).stderr
    refused = shop("apply", "-f", write_jobs(tmp_path, endless), expect=2).stderr

    assert "unknown day 'funday'" in one_error_line(said)
    assert one_error_line(refused).endswith(
        "job 'shop' field 'quiet': invalid schedule "
        "'mon,tue,wed,thu,fri,sat,sun': never ends: quiet without a break for over a year"
    )


def test_endpoints_show_names_the_next_quiet_window(
    cli_for: Callable[..., Cli], sqlite_url: str, tmp_path: Path
) -> None:
    shop = cli_for(sqlite_url, CRONPILOT_ALLOWED_NETWORKS="127.0.0.1/32")
    shop("apply", "-f", write_jobs(tmp_path, JOBS))

    shown = shop.json("endpoints", "show", "shop/stock")
    table = shop("endpoints", "show", "shop/stock").stdout

    upcoming = shown["next_quiet"]
    paris = ZoneInfo("Europe/Paris")
    start, end = (
        datetime.fromisoformat(upcoming[edge]).astimezone(paris) for edge in ("start", "end")
    )
    # Whenever it runs (on a weekend too: the window in force), Saturday 00:00 to Monday 00:00.
    assert (start.weekday(), start.hour, end.weekday(), end.hour) == (5, 0, 0, 0)
    assert end - start <= timedelta(days=2, hours=1)
    assert upcoming["every_seconds"] is None
    assert shown["quiet"][0]["days"] == [5, 6]
    assert "sat,sun Europe/Paris;" in table
