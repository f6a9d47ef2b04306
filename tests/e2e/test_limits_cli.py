"""`limits:` from a jobs file through the CLI, as a user runs it: a bad limit is one line at
`apply`, and `endpoints show` tells the endpoint's limit."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.e2e.conftest import Cli

JOBS = """\
limits:
  partner-api: {concurrency: 2, rate: 5/s}
jobs:
  - name: shop
    limit: partner-api
    endpoints:
      - name: stock
        url: https://93.184.216.34/stock
        interval: 1m
"""


def test_a_limit_of_0_exits_2_in_one_line_and_writes_nothing(
    cli_for: Callable[..., Cli], sqlite_url: str, tmp_path: Path
) -> None:
    cli = cli_for(sqlite_url)

    stderr = cli.apply_in(tmp_path, JOBS.replace("concurrency: 2", "concurrency: 0"), expect=2)

    assert stderr.splitlines() == [
        f"error: {tmp_path / 'jobs.yaml'}: field 'limits.partner-api.concurrency': must be at "
        "least 1 (a limit of 0 would never call)"
    ]
    assert cli.json("jobs", "list") == []


def test_endpoints_show_tells_the_limit(
    cli_for: Callable[..., Cli], sqlite_url: str, tmp_path: Path
) -> None:
    cli = cli_for(sqlite_url)
    cli.apply_in(tmp_path, JOBS)

    shown = cli.json("endpoints", "show", "shop/stock")["limit"]
    text = cli("endpoints", "show", "shop/stock").stdout

    assert shown["key"] == "partner-api"
    assert (shown["concurrency"], shown["rate"], shown["in_flight"], shown["held"]) == (
        2,
        "5/s",
        0,
        0,
    )
    assert "partner-api: 0/2 in flight, 5/s (burst 1)" in text


def test_limits_list_shows_each_key_as_a_table_and_as_json(
    cli_for: Callable[..., Cli], sqlite_url: str, tmp_path: Path
) -> None:
    cli = cli_for(sqlite_url)
    cli.apply_in(tmp_path, JOBS)

    listed = cli.json("limits", "list")
    text = cli("limits", "list").stdout

    assert listed == [
        {
            "key": "partner-api",
            "concurrency": 2,
            "rate": "5/s",
            "burst": 1,
            "in_flight": 0,
            "held": 0,
            "hold_reason": None,
            "held_at": None,
            "open_at": None,
        }
    ]
    assert "partner-api" in text and "5/s (burst 1)" in text
    assert cli.json("limits", "list", "--job", "shop") == listed


def test_limits_list_without_limits_is_an_empty_list_and_a_note(
    cli_for: Callable[..., Cli], sqlite_url: str
) -> None:
    cli = cli_for(sqlite_url)

    assert cli.json("limits", "list") == []
    done = cli("limits", "list")
    assert (done.stdout, done.stderr) == ("", "no limits declared; see docs/limits.md\n")
