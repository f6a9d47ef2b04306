"""The admin commands end to end: `cronpilot` as a process against SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cronpilot.adapters.cli.exit_codes import exit_code
from cronpilot.adapters.crypto import FernetCipher
from cronpilot.adapters.sql import open_sql_store
from cronpilot.domain.errors import (
    ConflictError,
    CronpilotError,
    EndpointNotFound,
    InvalidConfig,
    InvalidRunRequest,
    InvalidTokenName,
    ProposalNotPending,
    StoreUnavailable,
    TokenNotFound,
    UnsafeURL,
    ValueRejected,
)
from cronpilot.domain.model import BodyAbsence, ErrorKind, Response
from tests.e2e.conftest import Cli
from tests.support.finishing import finish_one

SECRET = "tok-e2e-5f1c9a"
JOBS = """\
jobs:
  - name: shop
    description: the web shop
    planner_mode: review
    endpoints:
      - name: orders
        description: new orders
        url: http://127.0.0.1:9/orders
        interval: 30s
        min_interval: 10s
        headers: {Authorization: "Bearer ${SHOP_TOKEN}", Accept: application/json}
      - name: nightly
        url: https://93.184.216.34/report
        cron: "0 3 * * *"
        timezone: Europe/Paris
"""
REFS = ["shop", "shop/nightly", "shop/orders"]
BROKEN_ADDITION = """\
  - name: billing
    endpoints:
      - name: usage
        url: http://127.0.0.1:9/usage
        cron: "0 3 * *"
"""


def write_jobs(directory: Path, text: str = JOBS, name: str = "jobs.yaml") -> str:
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def one_error_line(stderr: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("error: "), stderr
    return lines[0]


@pytest.fixture
def bind(cli_for: Callable[..., Cli]) -> Callable[[str], Cli]:
    def with_env(database_url: str) -> Cli:
        return cli_for(
            database_url,
            SHOP_TOKEN=SECRET,
            CRONPILOT_ALLOWED_NETWORKS="127.0.0.1/32",
            # Who pauses, for the default reason (getpass reads LOGNAME first).
            LOGNAME="ann",
        )

    return with_env


@pytest.fixture
def empty(bind: Callable[[str], Cli], sqlite_url: str) -> Cli:
    """A CLI on a migrated, empty SQLite database."""
    return bind(sqlite_url)


@pytest.fixture
def shop(bind: Callable[[str], Cli], sqlite_url: str, tmp_path: Path) -> Cli:
    """A CLI on a migrated SQLite database where `jobs.yaml` has been applied."""
    cli = bind(sqlite_url)
    cli("apply", "-f", write_jobs(tmp_path))
    return cli


def test_db_upgrade_then_apply_twice_changes_nothing_the_second_time(
    bind: Callable[[str], Cli], tmp_path: Path
) -> None:
    cli = bind(f"sqlite+aiosqlite:///{tmp_path / 'fresh.db'}")
    jobs_file = write_jobs(tmp_path)

    assert "database schema created at revision" in cli("db", "upgrade").stdout
    first = cli("apply", "-f", jobs_file).stdout
    second = cli.json("apply", "-f", jobs_file)

    assert "created   shop/orders" in first
    assert first.splitlines()[-1] == "3 created, 0 updated, 0 unchanged"
    assert second == {
        "created": [],
        "updated": [],
        "unchanged": second["unchanged"],
        "absent": [],
        "next_fires": {},
    }
    assert sorted(second["unchanged"]) == REFS


@pytest.mark.postgres
def test_apply_and_list_on_postgres(
    bind: Callable[[str], Cli], postgres_url: str, tmp_path: Path
) -> None:
    cli = bind(postgres_url)
    jobs_file = write_jobs(tmp_path)

    cli("apply", "-f", jobs_file)
    again = cli.json("apply", "-f", write_jobs(tmp_path, JOBS.replace("30s", "45s"), "v2.yaml"))
    endpoints = cli.json("endpoints", "list")

    assert again["updated"] == ["shop/orders"]
    assert [e["ref"] for e in endpoints] == ["shop/nightly", "shop/orders"]
    assert endpoints[1]["schedule"]["interval_seconds"] == 45.0
    assert SECRET not in str(endpoints)


def test_a_bad_file_exits_2_with_one_line_and_writes_nothing(shop: Cli, tmp_path: Path) -> None:
    bad = write_jobs(tmp_path, JOBS.replace("30s", "1m") + BROKEN_ADDITION, "bad.yaml")

    failed = shop("apply", "-f", bad, expect=2)

    assert one_error_line(failed.stderr).startswith(
        f"error: {bad}: job 'billing' endpoint 'usage' field 'cron': invalid schedule '0 3 * *': "
    )
    assert failed.stdout == ""
    assert [job["name"] for job in shop.json("jobs", "list")] == ["shop"]
    orders = shop.json("endpoints", "show", "shop/orders")
    assert orders["schedule"]["interval_seconds"] == 30.0


def test_endpoints_list_json_has_stable_keys_and_masked_secrets(shop: Cli) -> None:
    orders, nightly = (
        e for e in sorted(shop.json("endpoints", "list"), key=lambda e: e["ref"], reverse=True)
    )

    assert orders["ref"] == "shop/orders"
    assert orders["headers"] == {"Authorization": "****", "Accept": "application/json"}
    assert orders["schedule"] == {"cron": None, "interval_seconds": 30.0, "timezone": "UTC"}
    assert orders["min_interval_seconds"] == 10.0
    assert orders["next_run_at"] is not None
    assert orders["paused"] is None
    assert orders["last_run"] is None
    assert nightly["schedule"]["cron"] == "0 3 * * *"
    assert nightly["schedule"]["timezone"] == "Europe/Paris"


def test_endpoints_show_never_prints_a_header_secret(shop: Cli) -> None:
    for_people = shop("endpoints", "show", "shop/orders").stdout
    for_scripts = shop("endpoints", "show", "shop/orders", "--json").stdout

    assert "GET http://127.0.0.1:9/orders" in for_people
    assert '"Authorization": "****"' in for_people
    assert SECRET not in for_people
    assert SECRET not in for_scripts
    assert "****" in for_scripts


def test_pause_until_then_resume(shop: Cli) -> None:
    before = datetime.now(UTC)

    paused = shop.json("pause", "shop/orders", "--until", "30m", "--reason", "maintenance")
    shown = shop.json("endpoints", "show", "shop/orders")
    resumed = shop.json("resume", "shop/orders")

    until = datetime.fromisoformat(paused["paused"]["until"])
    assert before + timedelta(minutes=29) < until < datetime.now(UTC) + timedelta(minutes=31)
    assert paused["paused"]["reason"] == "maintenance"
    assert paused["next_run_source"] == "paused"
    assert shown["paused"] == paused["paused"]
    assert resumed["paused"] is None
    assert resumed["next_run_source"] != "paused"


def test_pause_without_until_holds_until_resumed(shop: Cli) -> None:
    said = shop("pause", "shop/nightly").stdout
    shown = shop.json("endpoints", "show", "shop/nightly")

    reason = f"paused by ann@{socket.gethostname()} from the CLI"
    assert said.strip() == f"paused shop/nightly, until resumed: {reason}"
    assert shown["paused"] == {
        "reason": reason,
        "until": None,
        "by": f"cli:ann@{socket.gethostname()}",
    }
    assert shown["next_run_at"] is None


@pytest.mark.parametrize("reason", ["", "  \t "])
def test_a_blank_pause_reason_says_who_paused(shop: Cli, reason: str) -> None:
    paused = shop.json("pause", "shop/orders", "--reason", reason)

    assert paused["paused"]["reason"] == f"paused by ann@{socket.gethostname()} from the CLI"


def test_runs_list_of_an_endpoint_without_runs(shop: Cli) -> None:
    assert shop.json("runs", "list", "shop/orders") == []
    for_people = shop("runs", "list", "shop/orders")
    assert for_people.stdout == ""
    assert for_people.stderr.strip() == "no runs yet for shop/orders"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["endpoints", "show", "shop/nope"], "error: no endpoint 'shop/nope'"),
        (["endpoints", "list", "--job", "nope"], "error: no job 'nope'"),
        (["runs", "list", "nope/orders"], "error: no endpoint 'nope/orders'"),
        (["runs", "show", "0" * 32], f"error: no run '{'0' * 32}'"),
        (["pause", "shop/nope"], "error: no endpoint 'shop/nope'"),
    ],
)
def test_unknown_things_exit_1_with_one_line(empty: Cli, args: list[str], message: str) -> None:
    failed = empty(*args, expect=1)

    assert one_error_line(failed.stderr) == message


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["pause", "shop/orders", "--until", "yesterday"], "is neither a duration"),
        (["pause", "shop/orders", "--until", "2001-01-01T00:00"], "is not in the future"),
        (["pause", "shop/orders", "--until", "99999999999h"], "is more than ten years ahead"),
        (["pause", "shop/orders", "--until", "3651d"], "is more than ten years ahead"),
        (
            ["pause", "shop/orders", "--until", "9999-12-31T23:59:59-05:00"],
            "is more than ten years ahead",
        ),
        (["pause", "shop/orders", "--until", "0001-01-01T00:00+05:00"], "is not in the future"),
        (["runs", "list", "shop/orders", "--limit", "0"], "--limit"),
        (["endpoints", "list", "--colour"], "No such option: --colour"),
        (["apply", "-f", "missing.yaml"], "missing.yaml: cannot read"),
    ],
)
def test_bad_input_exits_2_with_one_line(empty: Cli, args: list[str], message: str) -> None:
    failed = empty(*args, expect=2)

    assert message in one_error_line(failed.stderr)


@pytest.mark.parametrize(
    ("args", "start", "end"),
    [
        (["pause", "shop/orders", "--until", "x" * 100_000], "'xxxx", "chars) is neither"),
        (["jobs", "list", "--" + "x" * 100_000], "No such option: --xxxx", " chars)"),
    ],
    ids=["pause --until", "unknown option"],
)
def test_a_long_argument_is_echoed_cut(empty: Cli, args: list[str], start: str, end: str) -> None:
    failed = empty(*args, expect=2)

    line = one_error_line(failed.stderr)
    assert start in line
    assert end in line
    assert len(line) < 1100


def test_invalid_settings_exit_2_naming_the_variable(
    cli_for: Callable[..., Cli], tmp_path: Path
) -> None:
    cli = cli_for(f"sqlite+aiosqlite:///{tmp_path / 'x.db'}", CRONPILOT_CONCURRENCY="lots")

    failed = cli("jobs", "list", expect=2)

    assert one_error_line(failed.stderr).startswith("error: CRONPILOT_CONCURRENCY: ")


def test_a_sqlite_url_naming_a_folder_is_one_line_every_time(
    cli_for: Callable[..., Cli], tmp_path: Path
) -> None:
    # The driver's thread, failing to open a folder, could outlive the command and print a
    # traceback after the error line: now and then, so the commands run a few times each.
    folder = tmp_path / "data"
    folder.mkdir()
    cli = cli_for(f"sqlite+aiosqlite:///{folder}")

    for args in [("jobs", "list"), ("db", "upgrade")] * 3:
        failed = cli(*args, expect=3)

        assert one_error_line(failed.stderr).endswith(f"{folder} is a folder, not a file")


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_apply_logging_at_info_applies_and_says_what_it_did(
    cli_for: Callable[..., Cli], sqlite_url: str, tmp_path: Path, log_format: str
) -> None:
    cli = cli_for(
        sqlite_url,
        SHOP_TOKEN=SECRET,
        CRONPILOT_ALLOWED_NETWORKS="127.0.0.1/32",
        CRONPILOT_LOG_LEVEL="INFO",
        CRONPILOT_LOG_FORMAT=log_format,
    )

    applied = cli("apply", "-f", write_jobs(tmp_path))

    assert applied.stdout.splitlines()[-1] == "3 created, 0 updated, 0 unchanged"
    [logged] = [line for line in applied.stderr.splitlines() if "applied declarations" in line]
    assert "created_count" in logged
    assert "Traceback" not in applied.stderr


def test_an_unreachable_store_exits_3(cli_for: Callable[..., Cli], tmp_path: Path) -> None:
    cli = cli_for(f"sqlite+aiosqlite:///{tmp_path / 'no' / 'such' / 'dir.db'}")

    failed = cli("jobs", "list", expect=3)

    assert "error: " in one_error_line(failed.stderr)


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("garbage", "not a database URL"),
        ("mysql://u:hunter2@127.0.0.1/test", "'mysql' is not supported"),
        ("postgresql+psycopg2://u:hunter2@127.0.0.1/test", "driver 'psycopg2' is not supported"),
        ("sqlite+pysqlite:///hunter2.db", "driver 'pysqlite' is not supported"),
    ],
)
def test_an_unusable_database_url_exits_2_without_the_password(
    cli_for: Callable[..., Cli], url: str, reason: str
) -> None:
    failed = cli_for(url)("jobs", "list", expect=2)

    line = one_error_line(failed.stderr)
    assert line.startswith("error: CRONPILOT_DATABASE_URL: ")
    assert reason in line
    assert "hunter2" not in line


def test_a_sqlite_url_without_driver_gets_the_async_one(
    cli_for: Callable[..., Cli], sqlite_url: str
) -> None:
    cli = cli_for(sqlite_url.replace("sqlite+aiosqlite://", "sqlite://"))

    assert cli.json("jobs", "list") == []


@pytest.mark.postgres
@pytest.mark.parametrize("scheme", ["postgresql", "postgres"])
def test_a_pasted_postgres_url_gets_the_async_driver(
    cli_for: Callable[..., Cli], postgres_url: str, scheme: str
) -> None:
    cli = cli_for(postgres_url.replace("postgresql+asyncpg://", f"{scheme}://"))

    assert cli.json("jobs", "list") == []
    assert "(postgresql+asyncpg://" in cli("db", "upgrade").stdout


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ("Accept: application/json", r'Accept: "application/json\r\nX-Admin: 1"', "headers.Accept"),
        ("Accept: application/json", '"Accept\\nX": v', "headers.Accept\\nX"),
        ("min_interval: 10s", "min_interval: 10s\n        body: {a: .nan}", "body"),
        (
            "min_interval: 10s",
            "min_interval: 10s\n        max_response_size: 100000000000000000000",
            "max_response_size",
        ),
    ],
)
def test_a_header_or_body_that_cannot_be_sent_or_stored_exits_2(
    shop: Cli, tmp_path: Path, old: str, new: str, field: str
) -> None:
    assert old in JOBS
    bad = write_jobs(tmp_path, JOBS.replace(old, new, 1), "bad.yaml")

    failed = shop("apply", "-f", bad, expect=2)

    line = one_error_line(failed.stderr)
    assert line.startswith(f"error: {bad}: job 'shop' endpoint 'orders' field '{field}': ")
    assert shop.json("endpoints", "show", "shop/orders")["body"] is None


def test_urls_are_shown_with_their_secrets_masked(
    bind: Callable[[str], Cli], sqlite_url: str, tmp_path: Path
) -> None:
    cli = bind(sqlite_url)
    with_key = "/orders?page=1&api_key=${SHOP_TOKEN}"
    applied = write_jobs(tmp_path, JOBS.replace("/orders", with_key))
    refused = write_jobs(
        tmp_path, JOBS.replace("127.0.0.1:9/orders", f"10.0.0.9{with_key}"), "refused.yaml"
    )

    cli("apply", "-f", applied)
    for_people = cli("endpoints", "show", "shop/orders").stdout
    for_scripts = cli.json("endpoints", "list")
    failed = cli("apply", "-f", refused, expect=2)

    masked = "http://127.0.0.1:9/orders?page=1&api_key=****"
    assert f"GET {masked}" in for_people
    assert masked in [endpoint["url"] for endpoint in for_scripts]
    assert "refused URL 'http://10.0.0.9/orders?page=1&api_key=****'" in failed.stderr
    assert SECRET not in for_people + str(for_scripts) + failed.stderr


async def _record_failed_run(database_url: str, key: str, message: str) -> str:
    """A finished run of shop/orders whose error message quotes a URL, as a worker records it."""
    store = await open_sql_store(database_url, FernetCipher(key))
    try:
        later = datetime.now(UTC) + timedelta(days=2)
        claims = await store.claims.claim_due(later, "e2e-worker", 60, 10)
        [claim] = [claim for claim in claims if claim.endpoint.ref == "shop/orders"]
        response = Response(
            status_code=None,
            body_absence=BodyAbsence.NO_RESPONSE,
            error_kind=ErrorKind.CONNECTION,
            error_message=message,
            started_at=later,
            finished_at=later,
        )
        run = await finish_one(store.claims, claim, "e2e-worker", response, later)
        return run.id
    finally:
        await store.close()


def test_runs_show_masks_urls_in_error_messages(shop: Cli, sqlite_url: str) -> None:
    message = "ClientResponseError: url=URL('http://127.0.0.1:9/orders?token=hunter2&page=2')"
    key = shop.secret_key()
    run_id = asyncio.run(_record_failed_run(sqlite_url, key, message))

    for_people = shop("runs", "show", run_id).stdout
    for_scripts = shop.json("runs", "show", run_id)
    listed = shop("runs", "list", "shop/orders").stdout

    masked = "http://127.0.0.1:9/orders?token=****&page=2"
    assert masked in for_people
    assert masked in for_scripts["error_message"]
    assert "hunter2" not in for_people + str(for_scripts) + listed


def test_apply_lists_endpoints_the_file_no_longer_declares(shop: Cli, tmp_path: Path) -> None:
    without_nightly = JOBS.partition("      - name: nightly")[0]
    jobs_file = write_jobs(tmp_path, without_nightly, "v2.yaml")

    said = shop("apply", "-f", jobs_file).stdout
    again = shop.json("apply", "-f", jobs_file)

    assert f"left alone (not in {jobs_file}): shop/nightly" in said
    assert said.splitlines()[-1] == "0 created, 0 updated, 2 unchanged, 1 left alone"
    assert again["absent"] == ["shop/nightly"]
    assert shop.json("endpoints", "show", "shop/nightly")["paused"] is None


def test_help_documents_the_exit_codes(empty: Cli) -> None:
    said = " ".join(empty("--help").stdout.split())

    assert "Exit codes: 0 ok, 1 not found, 2 bad input" in said
    assert "3 database unavailable, 4 any other failure" in said


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (EndpointNotFound("shop/x"), 1),
        (InvalidConfig("jobs.yaml", "bad"), 2),
        (InvalidRunRequest("shop/x", "--from is after --to"), 2),
        (UnsafeURL("http://10.0.0.1/", "private"), 2),
        (ValueRejected("value too long"), 2),
        (InvalidTokenName("ci", "is taken by a live token"), 2),
        (TokenNotFound("ci"), 1),
        (ProposalNotPending("0" * 32, "applied"), 2),
        (StoreUnavailable("down"), 3),
        (ConflictError("duplicate job"), 4),
        (CronpilotError("anything else"), 4),
    ],
)
def test_each_kind_of_failure_has_its_own_exit_code(error: CronpilotError, code: int) -> None:
    assert exit_code(error) == code
