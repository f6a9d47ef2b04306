"""Secrets never leave (issue 32, item 2): a whole scenario run as processes with every logger
at DEBUG (SQLAlchemy's, aiosqlite's, aiohttp's included), then every line they logged grepped
for markers planted in a header, an endpoint's URL path and query, webhook URLs and a Slack
target's URL, which the address guard refuses at connect time. The CLI's output shows an
endpoint's path (it is how the endpoint is recognised), never a secret."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tests.e2e.conftest import ROOT, make_cli
from tests.integration.scheduler.endpoint_server import EndpointServer
from tests.integration.scheduler.processes import SchedulerProcesses

HEADER = "h3ad3rm4rk"
PLAIN_HEADER = "t3nantm4rk"
PATH = "p4thm4rk"
QUERY = "qu3rym4rk"
HOOK_PATH, HOOK_TOKEN = "h00kp4th", "h00kt0k"
TARGET_PATH, TARGET_TOKEN = "t4rg3tp4th", "t4rg3tt0k"
SLACK_PATH = "sl4ckp4th"
SECRETS = (HEADER, QUERY, HOOK_TOKEN, TARGET_TOKEN, SLACK_PATH)
"""What no output may show: the CLI shows an endpoint's and a webhook's path, not these."""
MARKERS = (*SECRETS, PLAIN_HEADER, PATH, HOOK_PATH, TARGET_PATH)
"""What no log line may carry."""
DEADLINE = 90.0
LOUD = """\
import logging

for name in ("sqlalchemy", "aiohttp", "asyncpg", "aiosqlite", "httpx", "httpcore", "urllib3"):
    logging.getLogger(name).setLevel(logging.DEBUG)
"""
"""A `sitecustomize` that turns the libraries' loggers to DEBUG before they are imported
(SQLAlchemy sets its own to WARNING unless one was set): every logger at DEBUG."""


def _jobs(port: int) -> str:
    here = f"http://127.0.0.1:{port}"
    return f"""\
jobs:
  - name: shop
    notify:
      after: 1
      urls: ["{here}/ok/{HOOK_PATH}?token={HOOK_TOKEN}"]
      targets:
        - {{kind: slack, url: "http://127.0.0.2:{port}/services/T0/B0/{SLACK_PATH}"}}
        - {{kind: webhook, url: "{here}/ok/{TARGET_PATH}?access_token={TARGET_TOKEN}"}}
    endpoints:
      - name: orders
        url: "{here}/fail/{PATH}?page=1&apikey={QUERY}"
        interval: 1s
        headers: {{Authorization: "Bearer {HEADER}", X-Tenant: "{PLAIN_HEADER}"}}
"""


async def _all_tried(processes: SchedulerProcesses) -> list[dict[str, object]]:
    """The outbox once every row of it was tried at least once."""
    while True:
        code, out, _ = await processes.cli_output("notifications", "list", "--json")
        assert code == 0
        rows: list[dict[str, object]] = json.loads(out)
        if len(rows) >= 3 and all(int(str(row["attempts"])) >= 1 for row in rows):
            return rows
        await asyncio.sleep(0.5)


async def test_no_log_at_any_level_carries_a_planted_secret(
    sqlite_url: str, tmp_path: Path, server: EndpointServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    jobs = tmp_path / "jobs.yaml"
    jobs.write_text(_jobs(server.port), encoding="utf-8")
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(LOUD, encoding="utf-8")
    monkeypatch.setenv("PYTHONPATH", f"{site}:{ROOT}")
    processes = SchedulerProcesses(sqlite_url, tmp_path, log_level="DEBUG", notify_poll_seconds=0.2)
    # Applied where the Slack target's address is allowed; the workers allow only 127.0.0.1,
    # so their guard refuses it at connect time.
    applier = make_cli(
        tmp_path,
        sqlite_url,
        CRONPILOT_SECRET_KEY=processes.key,
        CRONPILOT_ALLOWED_NETWORKS="127.0.0.0/8",
        CRONPILOT_LOG_LEVEL="DEBUG",
    )
    applier.env["PYTHONPATH"] = f"{site}:{ROOT}"
    applied = await asyncio.to_thread(applier, "apply", "-f", str(jobs))
    outputs = [applied.stdout, applied.stderr]
    try:
        await processes.start("w1")
        async with asyncio.timeout(DEADLINE):
            await server.until_calls(PATH, 2)
            rows = await _all_tried(processes)
        for args in (
            ("endpoints", "show", "shop/orders"),
            ("endpoints", "show", "shop/orders", "--json"),
            ("runs", "list", "shop/orders"),
            ("notifications", "list"),
            ("export",),
            ("apply", "--dry-run", "-f", str(jobs)),
        ):
            _, out, err = await processes.cli_output(*args)
            outputs += [out, err]
    finally:
        await processes.kill_all()

    logs = "\n".join([processes.log_of("w1"), applied.stderr, *outputs[1::2]])
    assert f"Bearer {HEADER}" in server.headers[PATH][0]["Authorization"]
    slack = [row for row in rows if "127.0.0.2" in str(row["url"])]
    assert slack and "refused http://127.0.0.2:" in str(slack[0]["last_error"])
    assert "INFO sqlalchemy.engine" in logs and "parameters hidden" in logs
    assert [line for line in logs.splitlines() if any(m in line for m in MARKERS)] == []
    assert [secret for secret in SECRETS if secret in "\n".join(outputs)] == []
