"""Approval gates from the CLI alone, `cronpilot` as a process on SQLite: list what waits,
approve or reject it (ids by unique prefix, JSON and YAML), exit codes that mean something, and
`approval` on a root endpoint refused at apply in one line, nothing written."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from cronpilot.adapters.sql import open_sql_store
from tests.e2e.conftest import Cli
from tests.integration.planner.builders import answer

JOBS = """\
jobs:
  - name: billing
    endpoints:
      - name: usage
        url: http://127.0.0.1:9/usage
        interval: 1m
      - name: cleanup
        url: http://127.0.0.1:9/cleanup
        method: DELETE
        depends_on: [usage]
        approval: required
        approval_timeout: 30m
"""


async def _read_usage(database_url: str) -> None:
    """usage answers once: cleanup waits for an approval."""
    store = await open_sql_store(database_url)
    try:
        await answer(store, "billing/usage", {"spend": 120})
    finally:
        await store.close()


@pytest.fixture
def billing(cli_for: Callable[..., Cli], sqlite_url: str, tmp_path: Path) -> Cli:
    cli = cli_for(sqlite_url, LOGNAME="ann", CRONPILOT_ALLOWED_NETWORKS="127.0.0.1/32")
    jobs = tmp_path / "jobs.yaml"
    jobs.write_text(JOBS, encoding="utf-8")
    cli("apply", "-f", str(jobs))
    return cli


def _error(done: object) -> str:
    lines = str(getattr(done, "stderr", "")).splitlines()
    assert len(lines) == 1, lines
    return lines[0]


async def test_list_then_approve_by_prefix_and_a_second_decision_is_bad_input(
    billing: Cli, sqlite_url: str
) -> None:
    assert billing("approvals", "list").stderr.strip() == "no approvals"
    await _read_usage(sqlite_url)

    [waiting] = billing.json(
        "approvals",
        "list",
        "--state",
        "pending",
        "--job",
        "billing",
        "--endpoint",
        "billing/cleanup",
    )
    table = billing("approvals", "list").stdout
    approved = billing("approvals", "approve", waiting["id"][:6], "--reason", "budget ok").stdout
    again = billing("approvals", "approve", waiting["id"], expect=2)
    rejected_late = billing("approvals", "reject", waiting["id"], expect=2)
    [decided] = yaml.safe_load(billing("approvals", "list", "-o", "yaml").stdout)
    audit = billing.json("audit", "list", "--action", "approve")

    assert waiting["endpoint"] == "billing/cleanup"
    assert (waiting["state"], waiting["decided_by"]) == ("pending", None)
    assert "billing/cleanup" in table and "pending" in table and waiting["id"][:8] in table
    assert approved == f"approved {waiting['id']} for billing/cleanup: budget ok\n"
    assert _error(again) == f"error: approval {waiting['id']} is approved, not pending"
    assert _error(rejected_late) == _error(again)
    assert (decided["state"], decided["reason"]) == ("approved", "budget ok")
    assert decided["decided_by"].startswith("cli:ann@")
    assert [(e["target"], e["detail"]) for e in audit] == [
        (waiting["id"], "approved billing/cleanup: budget ok")
    ]


async def test_reject_skips_the_dependant_and_says_who(billing: Cli, sqlite_url: str) -> None:
    await _read_usage(sqlite_url)
    [waiting] = billing.json("approvals", "list")

    rejected = billing.json("approvals", "reject", waiting["id"], "--reason", "not this month")
    [run] = billing.json("runs", "list", "billing/cleanup")
    shown = billing("endpoints", "show", "billing/cleanup").stdout
    declared = billing.json("endpoints", "show", "billing/cleanup")

    assert (rejected["state"], rejected["reason"]) == ("rejected", "not this month")
    assert run["status"] == "skipped"
    assert run["error_message"].startswith("skipped: approval rejected by cli:ann@")
    assert run["error_message"].endswith(": not this month")
    assert "after usage, approved by an admin within 30m" in shown
    assert declared["approval_timeout_seconds"] == 1800


def test_mistakes_are_one_line_with_the_exit_code_they_mean(billing: Cli, tmp_path: Path) -> None:
    unknown = billing("approvals", "approve", "0123abcd", expect=1)
    blank = billing("approvals", "reject", "0123abcd", "--reason", "  ", expect=2)
    state = billing("approvals", "list", "--state", "maybe", expect=2)
    gated_root = tmp_path / "root.yaml"
    gated_root.write_text(
        JOBS.replace("name: billing", "name: other").replace(
            "interval: 1m", "interval: 1m\n        approval: required"
        ),
        encoding="utf-8",
    )
    refused = billing("apply", "-f", str(gated_root), expect=2)

    assert _error(unknown) == "error: no approval '0123abcd'"
    assert "--reason" in _error(blank)
    assert "maybe" in _error(state)
    assert _error(refused) == (
        f"error: {gated_root}: job 'other' endpoint 'usage' field 'approval': applies to an "
        "endpoint with depends_on only: a root endpoint has no DAG run to wait in"
    )
    assert [job["name"] for job in billing.json("jobs", "list")] == ["billing"]
