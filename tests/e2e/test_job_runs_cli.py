"""`cronpilot pause JOB` / `resume JOB`, `runs cancel` and `runs retry` as a user runs them
(issue 25): each says what it did in one line, bad input gets one error line and changes
nothing, and the audit log names the person."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cronpilot.adapters.crypto import FernetCipher
from cronpilot.adapters.sql import open_sql_store
from cronpilot.domain.model import Finish, Response
from tests.e2e.conftest import Cli
from tests.e2e.test_admin_cli import one_error_line, write_jobs
from tests.support.finishing import finish_one, record_one

JOBS = """\
jobs:
  - name: shop
    endpoints:
      - name: orders
        url: http://127.0.0.1:9/orders
        interval: 1h
      - name: invoice
        url: http://127.0.0.1:9/invoice
        depends_on: [orders]
"""


@pytest.fixture
def shop(cli_for: Callable[..., Cli], sqlite_url: str, tmp_path: Path) -> Cli:
    cli = cli_for(sqlite_url, LOGNAME="ann", CRONPILOT_ALLOWED_NETWORKS="127.0.0.1/32")
    cli("apply", "-f", write_jobs(tmp_path, JOBS))
    return cli


def test_pause_a_job_over_an_endpoint_s_own_pause_then_resume_it(shop: Cli) -> None:
    endpoint_id = shop.json("endpoints", "show", "shop/orders")["id"]
    own = shop("pause", endpoint_id, "--reason", "mine").stdout
    paused = shop("pause", "shop", "--for", "2h", "--reason", "upkeep").stdout
    shown = shop.json("endpoints", "show", "shop/orders")
    jobs = shop.json("jobs", "list")
    listing = shop("endpoints", "list").stdout
    resumed = shop("resume", "shop").stdout
    after = shop.json("endpoints", "show", "shop/orders")

    assert own.startswith("paused shop/orders, until resumed: mine")
    assert paused.startswith("paused job shop, resumes in 2h")
    assert paused.rstrip().endswith(": upkeep")
    assert (shown["paused"]["reason"], shown["job_paused"]["reason"]) == ("mine", "upkeep")
    assert shown["job_paused"]["by"].startswith("cli:ann@")
    assert [(j["name"], j["paused"]["reason"]) for j in jobs] == [("shop", "upkeep")]
    assert listing.count("job paused") == 2
    assert resumed.strip() == "resumed job shop"
    assert (after["paused"]["reason"], after["job_paused"]) == ("mine", None)
    audit = shop.json("audit", "list")
    assert [(e["action"], e["target"]) for e in audit][:3] == [
        ("resume", "shop"),
        ("pause", "shop"),
        ("pause", "shop/orders"),
    ]


def test_bad_pause_input_gets_one_line_and_changes_nothing(shop: Cli) -> None:
    for args, code, message in [
        (["pause", "etl"], 1, "error: no job 'etl'"),
        (["resume", "etl"], 1, "error: no job 'etl'"),
        (["pause", "shop", "--for", "2h", "--until", "3h"], 2, "give --until or --for, not both"),
        (["pause", "shop", "--for", "soon"], 2, "'soon' is not a duration (30m, 2h)"),
        (["pause", "shop", "--for", "4000d"], 2, "is more than ten years ahead"),
        (["pause", "shop/nope"], 1, "error: no endpoint 'shop/nope'"),
    ]:
        failed = shop(*args, expect=code)
        assert message in one_error_line(failed.stderr), args
    assert shop.json("jobs", "list")[0]["paused"] is None


def test_cancel_a_queued_run_retry_it_and_refuse_what_cannot_be(shop: Cli) -> None:
    run_id = shop("run", "shop/orders").stdout.strip()
    # Its DAG run has not begun: there is nothing to clear yet.
    unfinished = shop("dag", "clear", run_id, "--from", "invoice", expect=2)
    no_run = shop("dag", "clear", "nope", "--from", "invoice", expect=1)

    cancelled = shop("runs", "cancel", run_id[:8]).stdout
    shown = shop.json("runs", "show", run_id)
    again = shop("runs", "cancel", run_id, expect=2)
    unknown = shop("runs", "cancel", "nope", expect=1)
    retried = shop("runs", "retry", run_id).stdout
    retry_id = retried.split()[2].rstrip(",")

    assert cancelled.strip() == f"cancelled run {run_id} before it started"
    assert (shown["status"], shown["cancel_requested_by"][:8]) == ("cancelled", "cli:ann@")
    assert one_error_line(again.stderr) == (
        f"error: run {run_id} has finished (cancelled): nothing to cancel"
    )
    assert one_error_line(unknown.stderr) == "error: no run 'nope'"
    assert one_error_line(unfinished.stderr) == (
        "error: shop/invoice: its upstream 'orders' has no finished run in this DAG run"
    )
    assert one_error_line(no_run.stderr) == "error: no run 'nope'"
    assert retried.strip() == f"queued run {retry_id}, retrying run {run_id}"
    runs = {r["id"]: (r["status"], r["trigger"]) for r in shop.json("runs", "list", "shop/orders")}
    assert runs == {run_id: ("cancelled", "manual"), retry_id: ("queued", "manual")}
    audit = shop.json("audit", "list")
    assert [(e["action"], e["target"]) for e in audit][:2] == [
        ("retry", "shop/orders"),
        ("cancel", "shop/orders"),
    ]


async def _dag_run(database_url: str, key: str) -> tuple[str, str]:
    """(orders' run, invoice's run) of one DAG run, as a worker records them."""
    store = await open_sql_store(database_url, FernetCipher(key))
    try:
        later = datetime.now(UTC) + timedelta(days=2)
        [claim] = await store.claims.claim_due(later, "e2e-worker", 60, 10)
        ok = Response(status_code=200, body={"total": 3})
        recorded = await record_one(store.claims, Finish(claim, "e2e-worker", ok, later, 60))
        [started] = recorded.started
        child = await finish_one(store.claims, started, "e2e-worker", ok, later)
        return recorded.run.id, child.id
    finally:
        await store.close()


def test_retry_a_dependant_s_run_re_runs_it_alone_in_its_dag_run(
    shop: Cli, sqlite_url: str
) -> None:
    key = shop.secret_key()
    root_id, child_id = asyncio.run(_dag_run(sqlite_url, key))

    retried = shop("runs", "retry", child_id[:8]).stdout

    assert retried.strip() == (
        f"re-running shop/invoice alone in its DAG run, retrying run {child_id[:8]}; "
        "a scheduler starts it now"
    )
    [entry] = [e for e in shop.json("audit", "list") if e["action"] == "retry"]
    assert entry["target"] == "shop/invoice"
    assert entry["detail"].startswith(f"run {child_id} again alone in DAG run ")
    assert {r["id"] for r in shop.json("runs", "list", "shop/orders")} == {root_id}
