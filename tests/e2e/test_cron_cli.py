"""`cronpilot cron`, and the fire times `apply` and `endpoints show` preview, as a process."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e.conftest import Cli
from tests.e2e.test_admin_cli import one_error_line, write_jobs

NOWHERE = "postgresql+asyncpg://127.0.0.1:1/none"
"""No database: previewing a crontab must not need one."""
JOBS = """\
jobs:
  - name: shop
    endpoints:
      - name: orders
        url: http://127.0.0.1:9/orders
        interval: 30s
      - name: nightly
        url: http://127.0.0.1:9/report
        cron: "30 2 * * 1-5"
        timezone: Europe/Paris
"""
PARIS_0230 = re.compile(r"(Mon|Tue|Wed|Thu|Fri) \d{4}-\d\d-\d\d 02:30:00 CES?T \(0[01]:30:00Z\)")


@pytest.fixture
def preview(cli_for: Callable[..., Cli]) -> Cli:
    return cli_for(NOWHERE)


@pytest.fixture
def shop(cli_for: Callable[..., Cli], sqlite_url: str) -> Cli:
    return cli_for(sqlite_url, CRONPILOT_ALLOWED_NETWORKS="127.0.0.1/32")


def test_cron_lists_weekdays_in_the_zone_and_in_utc(preview: Cli) -> None:
    shown = preview(
        "cron", "0 9 * * 1-5", "--timezone", "Europe/Paris", "--count", "6",
        "--after", "2027-01-01T10:00",
    ).stdout  # fmt: skip

    assert re.findall(r"\w{3} \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \w+ \(\S+\)", shown) == [
        "Mon 2027-01-04 09:00:00 CET (08:00:00Z)",
        "Tue 2027-01-05 09:00:00 CET (08:00:00Z)",
        "Wed 2027-01-06 09:00:00 CET (08:00:00Z)",
        "Thu 2027-01-07 09:00:00 CET (08:00:00Z)",
        "Fri 2027-01-08 09:00:00 CET (08:00:00Z)",
        "Mon 2027-01-11 09:00:00 CET (08:00:00Z)",
    ]


def test_cron_json_previews_the_spring_change(preview: Cli) -> None:
    shown = preview.json(
        "cron", "30 2 * * *", "--timezone", "Europe/Paris", "--count", "2",
        "--after", "2027-03-27T12:00+01:00",
    )  # fmt: skip

    assert shown == {
        "cron": "30 2 * * *",
        "timezone": "Europe/Paris",
        "after": "2027-03-27T12:00:00+01:00",
        "fires": [
            # 02:30 does not exist that night: once, when the clocks go forward.
            {"at": "2027-03-28T01:00:00+00:00", "local": "2027-03-28T03:00:00+02:00"},
            {"at": "2027-03-29T00:30:00+00:00", "local": "2027-03-29T02:30:00+02:00"},
        ],
    }


def test_cron_counts_from_now_by_default(preview: Cli) -> None:
    shown = preview.json("cron", "@hourly")

    assert len(shown["fires"]) == 5
    assert all(fire["at"].endswith(":00:00+00:00") for fire in shown["fires"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["0 9 * * 8"], "invalid schedule '0 9 * * 8': day-of-week field '8' is not valid"),
        (["L * * * *"], "minute field 'L' is not valid"),
        (["@reboot"], "@reboot is not a schedule"),
        (["@fortnightly"], "unknown macro '@fortnightly'"),
        (["0 0 30 2 *"], "never fires"),
        (["0 9 * *"], "has 4 fields"),
        (["* * * * *", "--timezone", "Mars/Olympus"], "'Mars/Olympus': unknown time zone"),
        (["* * * * *", "--after", "yesterday"], "'yesterday' is not an ISO-8601 time"),
        (["* * * * *", "--count", "0"], "--count"),
    ],
)
def test_a_bad_crontab_exits_2_with_one_line(preview: Cli, args: list[str], message: str) -> None:
    failed = preview("cron", *args, expect=2)

    assert message in one_error_line(failed.stderr)
    assert failed.stdout == ""


def test_apply_previews_the_next_fires_of_new_and_changed_crons(shop: Cli, tmp_path: Path) -> None:
    created = shop("apply", "-f", write_jobs(tmp_path, JOBS)).stdout.splitlines()
    unchanged = shop("apply", "-f", write_jobs(tmp_path, JOBS)).stdout
    updated = shop.json("apply", "-f", write_jobs(tmp_path, JOBS.replace("1-5", "6")))

    nightly = created.index("created   shop/nightly")
    assert all(PARIS_0230.search(line) for line in created[nightly + 1 : nightly + 4])
    assert "fires" not in "".join(created[: nightly + 1] + created[nightly + 4 :])
    assert "fires" not in unchanged
    saturdays = updated["next_fires"]["shop/nightly"]
    assert len(saturdays) == 3
    assert all(re.fullmatch(r".{10}T02:30:00\+0[12]:00", f["local"]) for f in saturdays)


def test_endpoints_show_previews_the_next_three_cron_fires(shop: Cli, tmp_path: Path) -> None:
    shop("apply", "-f", write_jobs(tmp_path, JOBS))

    nightly = shop("endpoints", "show", "shop/nightly").stdout
    nightly_json = shop.json("endpoints", "show", "shop/nightly")
    orders = shop.json("endpoints", "show", "shop/orders")

    assert len(PARIS_0230.findall(nightly)) == 3
    assert "cron fires" in nightly
    assert [f["local"][11:19] for f in nightly_json["next_fires"]] == ["02:30:00"] * 3
    assert nightly_json["next_fires"][0]["at"] >= nightly_json["next_run_at"]
    assert orders["next_fires"] == []
