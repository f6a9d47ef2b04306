"""The planner from the CLI alone: analyse an endpoint, see what was proposed and why, approve
or reject it, and see the effect on the schedule — `cronpilot` as a process on SQLite."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from cronpilot.adapters.sql import open_sql_store
from tests.e2e.conftest import Cli
from tests.integration.planner.builders import answer
from tests.support.fake_openai_server import Call, Calls, FakeOpenAI, submit
from tests.support.superseding import supersede

JOBS = """\
jobs:
  - name: shop
    description: the web shop
    planner_mode: review
    budget: 60/h
    endpoints:
      - name: orders
        description: new orders; nothing new means poll less
        url: http://127.0.0.1:9/orders
        interval: 30s
        min_interval: 10s
        max_interval: 5m
      - name: nightly
        url: http://127.0.0.1:9/report
        cron: "0 3 * * *"
        planner_mode: "off"
"""


async def _superseded(database_url: str, proposal_id: str) -> str:
    """The id of a newer proposal that supersedes `proposal_id`."""
    store = await open_sql_store(database_url)
    try:
        older = await store.planner.get_proposal(proposal_id)
        return (await supersede(store, proposal_id, older.created_at)).id
    finally:
        await store.close()


QUIET = [{"orders": []}] * 9
"""Eight compared calls that saw no change: a silent endpoint gives calls up after as many
(`SILENT_CALLS`)."""


async def _answers(database_url: str, *bodies: object) -> None:
    store = await open_sql_store(database_url)
    try:
        for body in bodies:
            await answer(store, "shop/orders", body)
    finally:
        await store.close()


@pytest.fixture
def shop(cli_for: Callable[..., Cli], sqlite_url: str, tmp_path: Path) -> Cli:
    cli = cli_for(sqlite_url, LOGNAME="ann", CRONPILOT_ALLOWED_NETWORKS="127.0.0.1/32")
    jobs = tmp_path / "jobs.yaml"
    jobs.write_text(JOBS, encoding="utf-8")
    cli("apply", "-f", str(jobs))
    return cli


def _error(done: object) -> str:
    stderr = str(getattr(done, "stderr", ""))
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("error: ")
    return lines[0]


async def test_review_approve_and_see_the_effect(shop: Cli, sqlite_url: str) -> None:
    await _answers(sqlite_url, *QUIET)

    analysed = shop.json("planner", "run-once", "shop/orders")
    [pending] = shop.json("proposals", "list", "--status", "pending", "--job", "shop")
    shown = shop.json("proposals", "show", pending["id"])
    before = shop.json("endpoints", "show", "shop/orders")
    approved = shop("proposals", "approve", pending["id"]).stdout
    after = shop.json("endpoints", "show", "shop/orders")
    again = shop("proposals", "approve", pending["id"], expect=2)
    rejected_late = shop("proposals", "reject", pending["id"], "--reason", "late", expect=2)
    [session] = shop.json("sessions", "list", "--endpoint", "shop/orders")
    details = shop.json("sessions", "show", session["id"])
    table = shop("sessions", "show", session["id"]).stdout

    assert analysed["status"] == "submitted"
    assert analysed["proposals"] == [pending["id"]]
    assert pending["change"] == "every 42s for 1d"
    assert pending["reason"].startswith(
        "no change seen (0 changes seen in 8 calls); every 30 s keeps the copy fresh 100% of "
        "the time; every 42 s would keep it fresh 100% (a damped step towards every "
    )
    assert pending["reason"].endswith("of 60/h across the job's 2 endpoints)")
    assert (shown["proposed_by"], shown["session_id"]) == ("freshness", session["id"])
    assert before["interval_hint"] is None
    assert approved.startswith(f"approved {pending['id']} for shop/orders: every 42s for 1d")
    assert after["interval_hint"]["interval_seconds"] == 42
    assert after["next_run_source"] == "hint-interval"
    assert _error(again) == f"error: proposal {pending['id']} is applied, not pending"
    assert _error(rejected_late) == _error(again)
    assert [c["name"] for c in details["tool_calls"]] == ["propose_interval", "submit_analysis"]
    assert details["tool_calls"][0]["arguments"]["interval_seconds"] == 42
    assert [c["outcome"] for c in details["tool_calls"]] == [
        f"held for review as proposal {pending['id']}",
        "analysis submitted",
    ]
    assert "propose_interval" in table
    assert "a damped step towards every" in table
    decided = shop.json("proposals", "show", pending["id"])
    assert decided["status"] == "applied"
    assert decided["decided_by"].startswith("cli:ann@")


async def test_reject_with_a_reason(shop: Cli, sqlite_url: str) -> None:
    await _answers(sqlite_url, *QUIET)
    shop("planner", "run-once", "shop/orders")
    [pending] = shop.json("proposals", "list")

    rejected = shop.json("proposals", "reject", pending["id"], "--reason", "sale tonight")

    assert (rejected["status"], rejected["outcome"]) == ("rejected", "sale tonight")
    assert shop.json("endpoints", "show", "shop/orders")["interval_hint"] is None
    assert shop.json("proposals", "list", "--status", "pending") == []


async def test_a_superseded_proposal_points_to_the_newer_and_cannot_be_decided(
    shop: Cli, sqlite_url: str
) -> None:
    await _answers(sqlite_url, *QUIET)
    shop("planner", "run-once", "shop/orders")
    [older] = shop.json("proposals", "list")
    newer = await _superseded(sqlite_url, older["id"])

    table = shop("proposals", "list").stdout
    [superseded] = shop.json("proposals", "list", "--status", "superseded")
    shown = shop.json("proposals", "show", older["id"])
    approving = shop("proposals", "approve", older["id"], expect=2)
    rejecting = shop("proposals", "reject", older["id"], "--reason", "no", expect=2)

    assert "superseded" in table
    assert superseded["id"] == older["id"]
    assert (shown["status"], shown["superseded_by"]) == ("superseded", newer)
    assert _error(approving) == (
        f"error: proposal {older['id']} is superseded by proposal {newer}, not pending"
    )
    assert _error(rejecting) == _error(approving)
    assert [p["id"] for p in shop.json("proposals", "list", "--status", "pending")] == [newer]


def test_planner_mistakes_are_one_line_errors(shop: Cli) -> None:
    off = shop("planner", "run-once", "shop/nightly", expect=2)
    missing = shop("proposals", "show", "nope", expect=1)
    blank = shop("proposals", "reject", "nope", "--reason", " ", expect=2)
    status = shop("proposals", "list", "--status", "maybe", expect=2)

    assert "planner mode is off" in _error(off)
    assert _error(missing) == "error: no proposal 'nope'"
    assert "--reason" in _error(blank)
    assert "maybe" in _error(status)


async def test_run_once_with_an_llm(
    shop: Cli, sqlite_url: str, cli_for: Callable[..., Cli]
) -> None:
    await _answers(sqlite_url, {"orders": [7]})
    script = [
        Calls([Call("get_response_history", {"fields": ["orders"]})]),
        Calls(
            [
                Call(
                    "propose_interval",
                    {"interval_seconds": 10, "ttl_seconds": 900, "reason": "orders are coming in"},
                )
            ]
        ),
        submit("orders arrive: polling faster"),
    ]
    async with FakeOpenAI(script) as server:
        llm = cli_for(
            sqlite_url, CRONPILOT_LLM_BASE_URL=server.base_url, CRONPILOT_LLM_MODEL="scripted"
        )
        analysed = await asyncio.to_thread(llm.json, "planner", "run-once", "shop/orders")

    [proposal] = shop.json("proposals", "list")
    assert (analysed["planner"], analysed["reasoning"]) == (
        "llm:scripted",
        "orders arrive: polling faster",
    )
    assert analysed["prompt_tokens"] == sum(prompt for prompt, _ in server.usage)
    assert (proposal["status"], proposal["proposed_by"], proposal["reason"]) == (
        "pending",
        "llm:scripted",
        "orders are coming in",
    )


async def test_approval_rechecks_the_guardrails(shop: Cli, sqlite_url: str, tmp_path: Path) -> None:
    await _answers(sqlite_url, *QUIET)
    shop("planner", "run-once", "shop/orders")
    [pending] = shop.json("proposals", "list")
    tighter = tmp_path / "tighter.yaml"
    tighter.write_text(JOBS.replace("min_interval: 10s", "min_interval: 50s"), encoding="utf-8")
    shop("apply", "-f", str(tighter))

    refused = shop("proposals", "approve", pending["id"], expect=4)

    assert _error(refused) == (
        f"error: proposal {pending['id']} refused by guardrails: "
        "interval 42s is below the minimum 50s"
    )
    decided = shop.json("proposals", "show", pending["id"])
    assert (decided["status"], decided["decided_by"][:8]) == ("refused", "cli:ann@")
    assert shop.json("endpoints", "show", "shop/orders")["interval_hint"] is None


async def test_a_job_without_a_mode_is_graded_and_learns_from_approvals(
    cli_for: Callable[..., Cli], sqlite_url: str, tmp_path: Path
) -> None:
    cli = cli_for(sqlite_url, LOGNAME="ann", CRONPILOT_ALLOWED_NETWORKS="127.0.0.1/32")
    jobs = tmp_path / "jobs.yaml"
    jobs.write_text(JOBS.replace("    planner_mode: review\n", ""), encoding="utf-8")
    cli("apply", "-f", str(jobs))
    await _answers(sqlite_url, *QUIET)

    analysed = cli.json("planner", "run-once", "shop/orders")
    [held] = cli.json("proposals", "list", "--status", "pending")
    cli("proposals", "approve", held["id"])
    [shop] = cli.json("planner", "autonomy", "--job", "shop")
    table = cli("planner", "autonomy").stdout

    assert held["confidence"] == 0.8
    assert held["outcome"] == "confidence 0.8 is below the job's threshold 0.92"
    assert analysed["proposals"] == [held["id"]]
    assert [c["outcome"] for c in analysed["tool_calls"]] == [
        "deferred: proposed at submit_analysis, decided by its confidence",
        f"analysis submitted; held for review as proposal {held['id']}",
    ]
    assert (shop["planner_mode"], shop["threshold"]) == ("graded", 0.92)
    assert [(s["approvals"], s["proposal_id"]) for s in shop["history"]] == [(1, held["id"])]
    assert "shop (graded): threshold 0.92, 1 decisions" in table
    assert "approved: 1 approved, 0 rejected since the last move" in table


async def test_run_once_says_a_change_held_back_by_a_rejection(shop: Cli, sqlite_url: str) -> None:
    await _answers(sqlite_url, *QUIET)
    shop("planner", "run-once", "shop/orders")
    [pending] = shop.json("proposals", "list")
    shop("proposals", "reject", pending["id"], "--reason", "sale tonight")
    await _answers(sqlite_url, {"orders": []})

    again = shop("planner", "run-once", "shop/orders").stdout

    assert "held back: propose_interval: the same change was rejected by cli:ann@" in again
    assert "(sale tonight)" in again
    assert shop.json("proposals", "list", "--status", "pending") == []


def test_run_once_exits_non_zero_when_the_analysis_failed(
    shop: Cli, sqlite_url: str, cli_for: Callable[..., Cli]
) -> None:
    unreachable = cli_for(
        sqlite_url,
        CRONPILOT_LLM_BASE_URL="http://127.0.0.1:9/v1",
        CRONPILOT_LLM_ATTEMPTS="1",
        CRONPILOT_LLM_TIMEOUT_SECONDS="2",
    )

    failed = unreachable("planner", "run-once", "shop/orders", expect=4)

    assert ": failed: " in failed.stdout
