"""Commands that say what happened: the request a run sent, what each tool call of a session
did, the interval in force, and exit codes and messages a user can act on."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TypeVar
from zoneinfo import ZoneInfo

import pytest
from alembic import command
from alembic.script import ScriptDirectory
from sqlalchemy import Connection

from cronpilot.adapters.crypto import FernetCipher
from cronpilot.adapters.sql import open_sql_store
from cronpilot.adapters.sql.engine import create_engine
from cronpilot.adapters.sql.migrate import alembic_config
from cronpilot.adapters.views.formats import clock_time
from cronpilot.domain.model import HintSource, IntervalHint, Response
from cronpilot.domain.ports import Store
from cronpilot.domain.runs.sent_request import sent_request
from cronpilot.scheduler.requests import request_for
from tests.e2e.conftest import Cli
from tests.e2e.test_admin_cli import one_error_line, write_jobs
from tests.support.finishing import finish_one
from tests.support.scheduling import set_hints

T = TypeVar("T")
SECRET = "tok-e2e-9d2b"
JOBS = """\
jobs:
  - name: shop
    description: the web shop
    endpoints:
      - name: orders
        url: http://127.0.0.1:9/orders
        interval: 30s
        min_interval: 10s
        headers: {Authorization: "Bearer ${SHOP_TOKEN}", Accept: application/json}
"""
NEW_ENDPOINT = """\
      - name: refunds
        url: http://127.0.0.1:9/refunds
        interval: 1m
"""


@pytest.fixture
def bind(cli_for: Callable[..., Cli]) -> Callable[[str], Cli]:
    def with_env(database_url: str) -> Cli:
        return cli_for(database_url, SHOP_TOKEN=SECRET, CRONPILOT_ALLOWED_NETWORKS="127.0.0.1/32")

    return with_env


@pytest.fixture
def shop(bind: Callable[[str], Cli], sqlite_url: str, tmp_path: Path) -> Cli:
    cli = bind(sqlite_url)
    cli("apply", "-f", write_jobs(tmp_path, JOBS))
    return cli


def _with_store(cli: Cli, url: str, action: Callable[[Store], Awaitable[T]]) -> T:
    """`action` on the CLI's database, with its key, as a worker would."""

    async def main() -> T:
        key = cli.secret_key()
        store = await open_sql_store(url, FernetCipher(key))
        try:
            return await action(store)
        finally:
            await store.close()

    return asyncio.run(main())


def _run_orders(shop: Cli, sqlite_url: str, *, keep_request: bool) -> str:
    """A finished run of shop/orders as a worker records it (with the request it sent, or as
    an older cronpilot did, without); its id."""

    async def record(store: Store) -> str:
        later = datetime.now(UTC) + timedelta(days=2)
        claims = await store.claims.claim_due(later, "e2e-worker", 60, 10)
        [claim] = [claim for claim in claims if claim.endpoint.ref == "shop/orders"]
        sent = sent_request(request_for(claim)) if keep_request else None
        response = Response(status_code=200, body={"n": 1}, request=sent)
        return (await finish_one(store.claims, claim, "e2e-worker", response, later)).id

    return _with_store(shop, sqlite_url, record)


def test_runs_show_prints_the_request_sent_with_secrets_masked(shop: Cli, sqlite_url: str) -> None:
    run_id = _run_orders(shop, sqlite_url, keep_request=True)

    for_people = shop("runs", "show", run_id).stdout
    for_scripts = shop.json("runs", "show", run_id)

    assert "GET http://127.0.0.1:9/orders" in for_people
    assert "Authorization: ****" in for_people
    assert "Accept: application/json" in for_people
    assert f"X-Cronpilot-Run-Id: {run_id}" in for_people
    request = for_scripts["request"]
    assert (request["method"], request["url"], request["body"]) == (
        "GET",
        "http://127.0.0.1:9/orders",
        None,
    )
    assert request["headers"]["Authorization"] == "****"
    assert SECRET not in for_people + str(for_scripts)


def test_runs_show_of_a_run_recorded_without_its_request_says_so(
    shop: Cli, sqlite_url: str
) -> None:
    run_id = _run_orders(shop, sqlite_url, keep_request=False)

    for_people = shop("runs", "show", run_id).stdout

    assert "not recorded (runs recorded before cronpilot kept requests" in " ".join(
        for_people.split()
    )
    assert shop.json("runs", "show", run_id)["request"] is None


def _head() -> tuple[str, str]:
    """The newest schema revision and the one before it."""
    script = ScriptDirectory.from_config(alembic_config())
    head = script.get_revision(script.get_current_head())
    assert head is not None and isinstance(head.down_revision, str)
    return head.revision, head.down_revision


async def _migrate_to(url: str, revision: str) -> None:
    config = alembic_config()

    def upgrade(connection: Connection) -> None:
        config.attributes["connection"] = connection
        command.upgrade(config, revision)

    engine = create_engine(url)
    try:
        async with engine.begin() as connection:
            await connection.run_sync(upgrade)
    finally:
        await engine.dispose()


def test_db_upgrade_says_which_revision_it_reached_and_from_which(
    bind: Callable[[str], Cli], tmp_path: Path
) -> None:
    head, previous = _head()
    fresh = bind(f"sqlite+aiosqlite:///{tmp_path / 'fresh.db'}")
    older_url = f"sqlite+aiosqlite:///{tmp_path / 'older.db'}"
    asyncio.run(_migrate_to(older_url, previous))
    older = bind(older_url)

    created = fresh("db", "upgrade").stdout
    again = fresh("db", "upgrade").stdout
    upgraded = older("db", "upgrade").stdout

    assert created.startswith(f"database schema created at revision {head} (sqlite")
    assert again.startswith(f"database schema is up to date at revision {head} (")
    assert upgraded.startswith(
        f"database schema upgraded from revision {previous} to {head} (sqlite"
    )


def test_a_command_on_a_missing_sqlite_file_fails_in_one_line_and_leaves_no_file(
    bind: Callable[[str], Cli], tmp_path: Path
) -> None:
    missing = tmp_path / "missing.db"
    cli = bind(f"sqlite+aiosqlite:///{missing}")

    for args in (["endpoints", "list"], ["runs", "show", "0" * 32], ["pause", "j/e"]):
        failed = cli(*args, expect=3)
        assert one_error_line(failed.stderr) == (
            f"error: no database at {missing}: create it with `cronpilot db upgrade` "
            f"(CRONPILOT_DATABASE_URL=sqlite+aiosqlite:///{missing})"
        )
        assert not missing.exists()


def test_pause_until_a_time_without_a_zone_reads_it_in_the_local_zone(shop: Cli) -> None:
    tokyo = replace(shop, env={**shop.env, "TZ": "Asia/Tokyo"})
    tomorrow = (datetime.now(UTC) + timedelta(days=1)).astimezone(ZoneInfo("Asia/Tokyo"))
    wall = tomorrow.replace(microsecond=0, tzinfo=None).isoformat()

    paused = tokyo.json("pause", "shop/orders", "--until", wall)
    # Rich frames the help in a box: its borders aside, the words read on.
    helped = " ".join(tokyo("pause", "--help").stdout.replace("│", " ").split())

    assert datetime.fromisoformat(paused["paused"]["until"]) == tomorrow.replace(microsecond=0)
    assert "in this machine's local zone unless it names one" in helped


def test_endpoints_list_shows_the_interval_in_force_hint_included(
    shop: Cli, sqlite_url: str
) -> None:
    wide = replace(shop, env={**shop.env, "COLUMNS": "200"})
    until = datetime.now(UTC).replace(microsecond=0) + timedelta(hours=1)

    async def hint(store: Store) -> None:
        endpoint = await store.catalog.get_endpoint("shop/orders")
        busy = IntervalHint(10, until, "orders are pouring in", HintSource.PLANNER)
        await set_hints(store.catalog, endpoint.id, busy, None, datetime.now(UTC))

    [before] = shop.json("endpoints", "list")
    _with_store(shop, sqlite_url, hint)
    [after] = shop.json("endpoints", "list")
    listed = wide("endpoints", "list").stdout

    assert before["in_force"] == {
        "source": "baseline",
        "interval_seconds": 30.0,
        "cron": None,
        "by": None,
        "until": None,
    }
    assert after["in_force"] == {
        "source": "hint-interval",
        "interval_seconds": 10.0,
        "cron": None,
        "by": "planner",
        "until": until.isoformat(),
    }
    shown = clock_time(until, datetime.now(UTC))
    assert f"every 10s, planner hint until {shown} (baseline every 30s)" in listed


def test_export_applies_back_unchanged_and_a_dry_run_then_finds_nothing_to_do(
    shop: Cli, tmp_path: Path
) -> None:
    exported = shop("export").stdout
    exported_file = write_jobs(tmp_path, exported, "exported.yaml")
    with_variable = replace(shop, env={**shop.env, "SHOP_ORDERS_AUTHORIZATION": f"Bearer {SECRET}"})

    dry = with_variable.json("apply", "-f", exported_file, "--dry-run")
    applied = with_variable("apply", "-f", exported_file).stdout
    again = shop("export").stdout

    assert SECRET not in exported
    assert "Authorization: ${SHOP_ORDERS_AUTHORIZATION}" in exported
    assert [(c["ref"], c["outcome"]) for c in dry["changes"]] == [
        ("shop", "unchanged"),
        ("shop/orders", "unchanged"),
    ]
    assert applied.splitlines()[-1] == "0 created, 0 updated, 2 unchanged"
    assert again == exported


def test_a_dry_run_says_each_field_that_would_change_and_writes_nothing(
    shop: Cli, tmp_path: Path
) -> None:
    edited = JOBS.replace("interval: 30s", "interval: 45s").replace(
        "Accept: application/json", "Accept: text/json"
    )
    jobs_file = write_jobs(tmp_path, edited + NEW_ENDPOINT, "edited.yaml")
    before = shop.json("endpoints", "list")

    said = shop("apply", "-f", jobs_file, "--dry-run").stdout

    assert said.splitlines() == [
        "unchanged  shop",
        "update     shop/orders",
        '             headers.Accept: "application/json" → "text/json"',
        "             schedule.interval_seconds: 30.0 → 45.0",
        "create     shop/refunds",
        "dry run: 1 to create, 1 to update, 1 unchanged; nothing written",
    ]
    assert shop.json("endpoints", "list") == before
