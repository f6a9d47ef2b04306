"""`cronpilot run` and `cronpilot backfill` as a user runs them: against a `cronpilot scheduler`
process for `run --wait`, and on their own for what they queue and what they refuse."""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from cronpilot.adapters.sql import open_sql_store
from cronpilot.domain.model import Schedule
from cronpilot.domain.ports import Store
from tests.e2e.conftest import Cli
from tests.e2e.test_admin_cli import one_error_line, write_jobs
from tests.integration.scheduler.builders import declare, spec
from tests.integration.scheduler.endpoint_server import EndpointServer
from tests.integration.scheduler.processes import SchedulerProcesses

MAX_SLEEP_SECONDS = 30.0
"""Far longer than `WAKE_DEADLINE`: a run within it was woken, not the end of a nap."""
WAKE_DEADLINE = 15.0
STARTUP_DEADLINE = 20.0
PARIS = ZoneInfo("Europe/Paris")
JOBS = """\
jobs:
  - name: shop
    endpoints:
      - name: orders
        url: http://127.0.0.1:9/orders
        interval: 1h
      - name: nightly
        url: http://127.0.0.1:9/nightly
        cron: "0 3 * * *"
        timezone: Europe/Paris
      - name: invoice
        url: http://127.0.0.1:9/invoice/{{ orders.id }}
        depends_on: [orders]
"""


@pytest.fixture
async def processes(sqlite_url: str, tmp_path: Path) -> AsyncIterator[SchedulerProcesses]:
    made = SchedulerProcesses(
        sqlite_url, tmp_path, grace_seconds=1.0, max_sleep_seconds=MAX_SLEEP_SECONDS
    )
    try:
        yield made
    finally:
        await made.kill_all()


@pytest.fixture
async def store(sqlite_url: str, processes: SchedulerProcesses) -> AsyncIterator[Store]:
    opened = await open_sql_store(sqlite_url, processes.cipher)
    try:
        yield opened
    finally:
        await opened.close()


async def test_run_wait_exits_0_on_success_and_5_on_failure(
    store: Store, server: EndpointServer, processes: SchedulerProcesses
) -> None:
    hourly = Schedule(interval_seconds=3600)
    await declare(
        store,
        datetime.now(UTC),
        spec(server, "ok", "good", schedule=hourly),
        spec(server, "fail", "bad", schedule=hourly),
    )
    await processes.start("proc-1")
    async with asyncio.timeout(STARTUP_DEADLINE):
        await server.until_calls("good")
        await server.until_calls("bad")
    # The worker now sleeps for the next hour's slots (or its 30 s nap): only a wake-up makes
    # it call in time.
    await asyncio.sleep(0.5)

    asked = time.monotonic()
    code, out, err = await processes.cli_output("run", "tests/good", "--wait", "--timeout", "20s")
    assert code == 0, out + err + processes.log_of("proc-1")
    assert time.monotonic() - asked < WAKE_DEADLINE
    assert "success 200" in out
    assert "manual" in out
    assert server.calls_of("good") == 2

    code, out, err = await processes.cli_output(
        "run", "tests/bad", "--wait", "--timeout", "20s", "--json"
    )
    assert code == 5, out + err
    shown = json.loads(out)
    assert (shown["status"], shown["status_code"], shown["trigger"]) == ("failed", 500, "manual")
    assert shown["requested_by"].startswith("cli:")
    bad = await store.catalog.get_endpoint("tests/bad")
    # The failure is not the schedule's: no backoff, no missed slot.
    assert bad.failure_count == 1


@pytest.fixture
def shop(cli_for: Callable[..., Cli], sqlite_url: str, tmp_path: Path) -> Cli:
    cli = cli_for(sqlite_url, LOGNAME="ann", CRONPILOT_ALLOWED_NETWORKS="127.0.0.1/32")
    cli("apply", "-f", write_jobs(tmp_path, JOBS))
    return cli


def test_run_queues_a_manual_run_and_wait_gives_up_at_its_timeout(shop: Cli) -> None:
    run_id = shop("run", "shop/orders").stdout.strip()

    shown = shop.json("runs", "show", run_id)
    assert (shown["status"], shown["trigger"]) == ("queued", "manual")
    assert shown["requested_by"].startswith("cli:ann@")
    assert shown["due_at"] == shown["slot_at"]
    # No worker runs here: it stays queued, and so does one waited for.
    failed = shop("run", "shop/orders", "--wait", "--timeout", "1s", expect=4)
    assert "is still queued after 1s; it was not cancelled" in one_error_line(failed.stderr)
    runs = shop.json("runs", "list", "shop/orders")
    assert [(r["status"], r["trigger"]) for r in runs] == [("queued", "manual")] * 2


def test_backfill_queues_the_slots_without_a_run_and_is_idempotent(shop: Cli) -> None:
    yesterday = (datetime.now(UTC) - timedelta(days=1)).date()
    start, end = f"{yesterday - timedelta(days=3)}", f"{yesterday} 04:00"

    first = shop.json("backfill", "shop/nightly", "--from", start, "--to", end)
    again = shop("backfill", "shop/nightly", "--from", start, "--to", end).stdout

    assert (first["queued"], first["skipped"]) == (4, 0)
    slots = [datetime.fromisoformat(run["slot_at"]) for run in first["runs"]]
    assert slots == sorted(slots)
    assert {(slot.utcoffset(), slot.astimezone(PARIS).hour) for slot in slots} == {
        (timedelta(0), 3)
    }
    dues = [datetime.fromisoformat(run["due_at"]) for run in first["runs"]]
    assert [b - a for a, b in itertools.pairwise(dues)] == [timedelta(seconds=1)] * 3
    assert again.startswith("queued 0 backfill runs of shop/nightly; skipped 4 slots")
    runs = shop.json("runs", "list", "shop/nightly")
    assert {(r["trigger"], r["status"]) for r in runs} == {("backfill", "queued")}
    assert len(runs) == 4


BAD_INPUT = [
    (["--from", "2030-01-02", "--to", "2030-01-01"], "is after --to"),
    (["--from", "3000-01-01", "--to", "3000-01-02"], "is in the future"),
    (["--from", "last week", "--to", "2030-01-01"], "Invalid value for --from"),
    (["--from", "2026-01-01", "--to", "soon"], "Invalid value for --to"),
    (["--from", "1990-01-01", "--to", "1990-01-02"], "more than ten years ago"),
    (["--from", "ROOT-01-01", "--to", "2030-01-01"], "is not a time"),
    (["--max", "0", "--from", "2026-01-01", "--to", "2026-01-02"], "--max"),
]
"""`backfill shop/orders …` mistakes (in one test: each command costs a process start)."""


def test_bad_input_exits_2_with_one_line_and_queues_nothing(shop: Cli) -> None:
    for args, message in BAD_INPUT:
        failed = shop("backfill", "shop/orders", *args, expect=2)
        assert message in one_error_line(failed.stderr), args
    for command, message in [
        (["run", "shop/invoice"], "filled from its upstreams' responses; run an upstream"),
        (
            ["backfill", "shop/invoice", "--from", "2026-01-01", "--to", "2026-01-02"],
            "it has no schedule of its own",
        ),
        (["run", "shop/orders", "--wait", "--timeout", "0s"], "--timeout"),
    ]:
        failed = shop(*command, expect=2)
        assert message in one_error_line(failed.stderr), command
    for command in (
        ["run", "shop/nope"],
        ["backfill", "shop/nope", "--from", "2026-01-01", "--to", "2026-01-02"],
    ):
        failed = shop(*command, expect=1)
        assert one_error_line(failed.stderr) == "error: no endpoint 'shop/nope'"

    for ref in ("shop/orders", "shop/invoice"):
        assert shop.json("runs", "list", ref) == []


def test_backfill_of_more_slots_than_max_says_how_many(shop: Cli) -> None:
    now = datetime.now(UTC)
    start = (now - timedelta(hours=150)).isoformat()

    failed = shop("backfill", "shop/orders", "--from", start, "--to", now.isoformat(), expect=2)
    line = one_error_line(failed.stderr)
    assert "slots in range have no run, more than 100; pass --max" in line
    count = int(line.split("--max ")[1].split()[0])
    assert count in (150, 151)
    assert shop.json("runs", "list", "shop/orders") == []

    queued = shop.json(
        "backfill", "shop/orders", "--from", start, "--to", now.isoformat(), "--max", str(count)
    )
    assert queued["queued"] == count
