"""What the CLI says must be true, and say what holds a thing back (issue 32, item 4): a
paused job's next run, a run queued behind a pause, a cancelled run's request, a retry of a run
still under way, a missing secret key, SMTP credentials without TLS, a search that matches
nothing; and `--version`, `runs list --job/--status`, `jobs show`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from tests.e2e.conftest import Cli
from tests.e2e.test_admin_cli import SECRET, one_error_line, write_jobs


@pytest.fixture
def shop(cli_for: Callable[..., Cli], sqlite_url: str, tmp_path: Path) -> Cli:
    cli = cli_for(
        sqlite_url,
        SHOP_TOKEN=SECRET,
        CRONPILOT_ALLOWED_NETWORKS="127.0.0.1/32",
        LOGNAME="ann",
        COLUMNS="200",
    )
    cli("apply", "-f", write_jobs(tmp_path))
    return cli


def _line(text: str, ref: str) -> str:
    [line] = [line for line in text.splitlines() if ref in line]
    return line


def test_version_prints_the_package_version(shop: Cli) -> None:
    assert shop("--version").stdout.startswith("cronpilot 0.")


def test_a_paused_job_shows_when_it_resumes_and_holds_a_run_asked_for_by_hand(shop: Cli) -> None:
    shop("pause", "shop", "--for", "2h", "--reason", "maintenance")

    listed = _line(shop("endpoints", "list").stdout, "shop/orders")
    queued = shop("run", "shop/orders")
    waited = shop("run", "shop/orders", "--wait", "--timeout", "1s", expect=4)

    assert " now " not in listed
    assert "in 1h59m" in listed or "in 2h" in listed
    assert "job paused" in listed
    assert "its job shop is paused (resumes in 1h59m" in queued.stderr
    assert ": maintenance (by cli:ann@" in queued.stderr
    assert "cronpilot resume shop" in queued.stderr
    error = waited.stderr.splitlines()[-1]
    assert "is still queued after 1s because its job shop is paused (resumes in" in error


def test_a_run_cancelled_before_it_started_says_no_request_was_sent(shop: Cli) -> None:
    shop("pause", "shop", "--for", "1h")
    run_id = shop("run", "shop/orders").stdout.strip()

    retried = shop("runs", "retry", run_id, expect=2)
    shop("runs", "cancel", run_id)
    shown = shop("runs", "show", run_id).stdout

    assert f"run {run_id} is still queued" in one_error_line(retried.stderr)
    assert "none sent: the run was cancelled before a request was sent" in shown
    assert "predates" not in shown and "before cronpilot kept requests" not in shown
    assert len(shop.json("runs", "list", "--job", "shop")) == 1


def test_runs_list_by_job_and_status(shop: Cli) -> None:
    shop("pause", "shop", "--for", "1h")
    kept = shop("run", "shop/orders").stdout.strip()
    cancelled = shop("run", "shop/nightly").stdout.strip()
    shop("runs", "cancel", cancelled)

    every = shop.json("runs", "list", "--job", "shop")
    queued = shop.json("runs", "list", "--job", "shop", "--status", "queued")
    table = shop("runs", "list", "--status", "cancelled").stdout
    none = shop("runs", "list", "--job", "shop", "--status", "success")
    bad = shop("runs", "list", "--status", "maybe", expect=2)

    assert {(r["id"], r["endpoint"]) for r in every} == {
        (kept, "shop/orders"),
        (cancelled, "shop/nightly"),
    }
    assert [r["id"] for r in queued] == [kept]
    assert "shop/nightly" in _line(table, "cancelled")
    assert none.stderr == "no runs of job shop success\n"
    assert "maybe" in one_error_line(bad.stderr)


def test_jobs_show(shop: Cli) -> None:
    shown = shop.json("jobs", "show", "shop")
    table = shop("jobs", "show", "shop").stdout
    missing = shop("jobs", "show", "nope", expect=1)

    assert (shown["name"], shown["planner_mode"], shown["endpoints"]) == ("shop", "review", 2)
    assert shown["endpoint_refs"] == ["shop/nightly", "shop/orders"]
    assert "the web shop" in table
    assert "nightly, orders" in table
    assert one_error_line(missing.stderr) == "error: no job 'nope'"


def test_a_read_command_makes_no_key_and_says_which_is_missing(
    cli_for: Callable[..., Cli], sqlite_url: str, tmp_path: Path
) -> None:
    key = Fernet.generate_key().decode()
    keyed = cli_for(
        sqlite_url,
        SHOP_TOKEN=SECRET,
        CRONPILOT_SECRET_KEY=key,
        CRONPILOT_ALLOWED_NETWORKS="127.0.0.1/32",
    )
    keyed("apply", "-f", write_jobs(tmp_path))
    keyless = cli_for(sqlite_url)

    refused = keyless("endpoints", "list", expect=2)

    assert one_error_line(refused.stderr) == (
        f"error: CRONPILOT_SECRET_KEY: not set, and no key file {tmp_path / 'secret.key'}: this "
        "database's secrets were sealed with a key; set CRONPILOT_SECRET_KEY to the key the "
        "other workers use (or restore the file)"
    )
    assert not (tmp_path / "secret.key").exists()


def test_a_fresh_database_is_read_without_making_a_key(
    cli_for: Callable[..., Cli], sqlite_url: str, tmp_path: Path
) -> None:
    cli = cli_for(sqlite_url)
    cli("jobs", "list")
    cli("endpoints", "list")
    assert not (tmp_path / "secret.key").exists()


def test_smtp_credentials_without_tls_are_refused(
    cli_for: Callable[..., Cli], sqlite_url: str, tmp_path: Path
) -> None:
    jobs = write_jobs(
        tmp_path,
        """\
jobs:
  - name: shop
    notify:
      targets:
        - {kind: email, host: 127.0.0.1, from: a@example.com, to: [b@example.com],
           username: cron, password: p4ss}
    endpoints:
      - name: orders
        url: http://127.0.0.1:9/orders
        interval: 30s
""",
    )
    cli = cli_for(sqlite_url, CRONPILOT_ALLOWED_NETWORKS="127.0.0.1/32")

    refused = cli("apply", "-f", jobs, expect=2)

    error = one_error_line(refused.stderr)
    assert "field 'notify.targets[0].starttls'" in error
    assert "sent in clear without it: set starttls: true" in error
    assert "p4ss" not in refused.stderr
    assert cli.json("endpoints", "list") == []


def test_a_search_of_nonsense_matches_nothing(shop: Cli) -> None:
    nothing = shop("search", "zzzz qqqq")
    found = shop("search", "new orders", "--limit", "1")

    assert nothing.stdout == ""
    assert "no endpoint matches" in nothing.stderr
    assert "shop/orders" in found.stdout
