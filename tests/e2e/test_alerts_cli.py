"""Alerts end to end: `apply` refusing bad `notify` settings, `notifications list` showing
what a failing endpoint raised."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from cronpilot.adapters.crypto import FernetCipher
from cronpilot.adapters.sql import open_sql_store
from cronpilot.domain.model import Response
from tests.e2e.conftest import Cli
from tests.support.finishing import finish_one

HOOK = "http://127.0.0.1:9/hooks?token=hunter2"
JOBS = f"""\
jobs:
  - name: shop
    notify: ["{HOOK}"]
    endpoints:
      - name: orders
        url: http://127.0.0.1:9/orders
        interval: 30s
        notify: {{after: 2}}
        pause_after: 3
      - name: stock
        url: http://127.0.0.1:9/stock
        interval: 30s
"""


@pytest.fixture
def cli(cli_for: Callable[..., Cli], sqlite_url: str) -> Cli:
    return cli_for(sqlite_url, CRONPILOT_ALLOWED_NETWORKS="127.0.0.1/32", COLUMNS="200")


def _write(directory: Path, text: str, name: str = "jobs.yaml") -> str:
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            (HOOK, "http://169.254.169.254/latest/meta-data"),
            "job 'shop' field 'notify.urls[0]': refused URL "
            "'http://169.254.169.254/latest/meta-data': 169.254.169.254 is link-local"
            "; to call it, add 169.254.169.254/32 to CRONPILOT_ALLOWED_NETWORKS",
        ),
        (
            ("{after: 2}", "{after: 0}"),
            "job 'shop' endpoint 'orders' field 'notify.after': "
            "Input should be greater than or equal to 1",
        ),
        (
            ("pause_after: 3", "pause_after: 0"),
            "job 'shop' endpoint 'orders' field 'pause_after': "
            "Input should be greater than or equal to 1",
        ),
    ],
    ids=["metadata address", "after 0", "pause_after 0"],
)
def test_bad_alert_settings_exit_2_with_one_line_and_write_nothing(
    cli: Cli, tmp_path: Path, change: tuple[str, str], message: str
) -> None:
    jobs_file = _write(tmp_path, JOBS.replace(*change))

    failed = cli("apply", "-f", jobs_file, expect=2)

    assert failed.stderr.splitlines() == [f"error: {jobs_file}: {message}"]
    assert cli.json("jobs", "list") == []


async def _fail_orders(database_url: str, key: str, times: int) -> None:
    """Fail shop/orders `times` times, as a worker would record it."""
    store = await open_sql_store(database_url, FernetCipher(key))
    try:
        orders = await store.catalog.get_endpoint("shop/orders")
        for _ in range(times):
            due = (await store.catalog.get_endpoint(orders.id)).next_run_at
            assert due is not None
            claims = await store.claims.claim_due(due, "e2e", 60, 10)
            for claim in claims:
                failed = claim.endpoint.id == orders.id
                response = Response(status_code=503 if failed else 200)
                await finish_one(store.claims, claim, "e2e", response, due)
    finally:
        await store.close()


def test_notifications_list_shows_what_a_failing_endpoint_raised(
    cli: Cli, tmp_path: Path, sqlite_url: str
) -> None:
    cli("apply", "-f", _write(tmp_path, JOBS))
    key = cli.secret_key()
    asyncio.run(_fail_orders(sqlite_url, key, 3))

    listed = cli.json("notifications", "list", "--endpoint", "shop/orders")
    table = cli("notifications", "list", "--job", "shop").stdout

    assert [(n["event"], n["endpoint"], n["status"], n["attempts"]) for n in listed] == [
        ("auto_paused", "shop/orders", "pending", 0),
        ("failing", "shop/orders", "pending", 0),
    ]
    assert {n["url"] for n in listed} == {"http://127.0.0.1:9/hooks?token=****"}
    assert listed[0]["payload"]["endpoint"] == "shop/orders"
    assert "auto_paused" in table
    assert "failing" in table
    assert {n["kind"] for n in listed} == {"webhook"}
    assert "webhook: http://127.0.0.1:9/hooks?token=****" in table
    assert "hunter2" not in table + str(listed)
    shown = cli.json("endpoints", "show", "shop/orders")
    assert shown["paused"] == {
        "reason": "auto-paused after 3 consecutive failures",
        "until": None,
        "by": "scheduler",
    }
    assert (shown["notify"], shown["notify_after"], shown["pause_after"]) == (
        ["http://127.0.0.1:9/hooks?token=****"],
        2,
        3,
    )
    assert (
        "notify http://127.0.0.1:9/hooks?token=**** after 2 failures; pause after 3 failures"
        in cli("endpoints", "show", "shop/orders").stdout
    )
    assert cli.json("notifications", "list", "--status", "delivered") == []
    assert cli.json("notifications", "list", "--endpoint", "shop/stock") == []


def test_notifications_list_bad_options(cli: Cli) -> None:
    bad_status = cli("notifications", "list", "--status", "lost", expect=2)
    no_job = cli("notifications", "list", "--job", "nope", expect=1)

    assert len(bad_status.stderr.splitlines()) == 1
    assert "'lost' is not one of" in bad_status.stderr
    assert no_job.stderr.splitlines() == ["error: no job 'nope'"]


def test_notify_test_queues_a_test_alert_and_redeliver_sends_one_again(
    cli: Cli, tmp_path: Path
) -> None:
    cli("apply", "-f", _write(tmp_path, JOBS))

    said = cli("notify", "test", "shop/orders").stdout
    [queued] = cli.json("notifications", "list", "--endpoint", "shop/orders")
    again = cli.json("notifications", "redeliver", queued["id"])
    missing = cli("notifications", "redeliver", "nope", expect=1)
    nowhere = cli("notify", "test", "shop/nowhere", expect=1)

    assert said.startswith(f"test alert {queued['id']} queued for webhook http://127.0.0.1:9/hooks")
    assert "hunter2" not in said
    assert (queued["event"], queued["kind"], again["id"]) == ("test", "webhook", queued["id"])
    assert len(missing.stderr.splitlines()) == 1
    assert "nope" in missing.stderr
    assert len(nowhere.stderr.splitlines()) == 1
