"""`retry`, `accept_hints`, `Retry-After` and endpoint hints as a user sees them through the CLI."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cronpilot.adapters.crypto import FernetCipher
from cronpilot.adapters.sql import open_sql_store
from cronpilot.domain.model import Attempt, ErrorKind, Response, Steering
from tests.e2e.conftest import Cli
from tests.support.finishing import finish_one

JOBS = """\
jobs:
  - name: shop
    endpoints:
      - name: orders
        url: http://127.0.0.1:9/orders
        interval: 30s
        retry: {attempts: 3, backoff: 1s, max_backoff: 30s, on: [timeout, 429]}
        accept_hints: true
"""


@pytest.fixture
def shop(cli_for: Callable[..., Cli], sqlite_url: str, tmp_path: Path) -> Cli:
    # Wide enough that rich wraps no line the assertions read.
    cli = cli_for(sqlite_url, CRONPILOT_ALLOWED_NETWORKS="127.0.0.1/32", COLUMNS="250")
    jobs = tmp_path / "jobs.yaml"
    jobs.write_text(JOBS, encoding="utf-8")
    cli("apply", "-f", str(jobs))
    return cli


async def _record_steered_run(database_url: str, key: str) -> str:
    """A run of shop/orders that took two attempts, the last a 429 asking for 5 minutes and
    an interval of 20 s, as a worker records it."""
    store = await open_sql_store(database_url, FernetCipher(key))
    try:
        now = datetime.now(UTC) + timedelta(seconds=1)
        [claim] = await store.claims.claim_due(now, "e2e-worker", 60, 10)
        steering = Steering(retry_after_seconds=300, next_run_interval_seconds=20)
        attempts = (
            Attempt(1, now, 30_000.0, None, ErrorKind.TIMEOUT, "no complete answer within 30 s"),
            Attempt(2, now, 4.0, 429, ErrorKind.HTTP_STATUS, "HTTP 429", steering),
        )
        response = Response(
            status_code=429,
            error_kind=ErrorKind.HTTP_STATUS,
            error_message="HTTP 429",
            steering=steering,
            attempts=attempts,
        )
        run = await finish_one(store.claims, claim, "e2e-worker", response, now)
        return run.id
    finally:
        await store.close()


def test_runs_and_endpoints_show_attempts_retry_after_and_hint_provenance(
    shop: Cli, sqlite_url: str
) -> None:
    key = shop.secret_key()
    run_id = asyncio.run(_record_steered_run(sqlite_url, key))

    run_text = shop("runs", "show", run_id).stdout
    run_json = shop.json("runs", "show", run_id)
    endpoint_text = shop("endpoints", "show", "shop/orders").stdout
    endpoint_json = shop.json("endpoints", "show", "shop/orders")
    listed = shop("endpoints", "list").stdout

    assert "attempt 2" in run_text
    assert "1: timeout (30000ms); 2: 429 (4ms)" in run_text
    assert "Retry-After: no call for 5m" in run_text
    assert "Cronpilot-Next-Run: endpoint hint every 20s" in run_text
    assert [a["status_code"] for a in run_json["attempts"]] == [None, 429]
    assert run_json["attempts"][1]["retry_after_seconds"] == 300
    assert "3 attempts on timeout, 429, backoff 1s..30s" in endpoint_text
    assert "by the endpoint: Cronpilot-Next-Run: every 20s" in endpoint_text
    assert endpoint_json["retry"]["attempts"] == 3
    assert endpoint_json["accept_hints"] is True
    assert endpoint_json["retry_after_at"] == endpoint_json["next_run_at"]
    assert endpoint_json["next_run_source"] == "retry-after"
    assert endpoint_json["interval_hint"]["source"] == "endpoint"
    assert "retry-after" in listed


@pytest.mark.parametrize(
    ("retry", "message"),
    [
        ("{attempts: 0}", "field 'retry.attempts': Input should be greater than or equal to 1"),
        ("{attempts: 100}", "field 'retry.attempts': Input should be less than or equal to 10"),
    ],
)
def test_a_bad_retry_exits_2_with_one_line_and_writes_nothing(
    shop: Cli, tmp_path: Path, retry: str, message: str
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(JOBS.replace("{attempts: 3,", f"{retry[:-1]},"), encoding="utf-8")

    failed = shop("apply", "-f", str(bad), expect=2)

    [line] = failed.stderr.splitlines()
    assert line.startswith(f"error: {bad}: job 'shop' endpoint 'orders' {message}")
    assert shop.json("endpoints", "show", "shop/orders")["retry"]["attempts"] == 3
