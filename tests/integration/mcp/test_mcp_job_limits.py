"""A job-limited token's MCP server shows its jobs and nothing of another: its lists hold
its jobs only, its tools work on its own runs, and a name or id of another job is answered as
one that does not exist (decision 0049)."""

from __future__ import annotations

from datetime import UTC, datetime

from cronpilot.adapters.jobs_file import parse_declarations
from cronpilot.adapters.wake import InProcessWaker
from cronpilot.domain.access.access import Scope
from cronpilot.usecases.access import create_token
from cronpilot.usecases.declarations import apply_declarations
from cronpilot.usecases.run_requests import request_run
from tests.integration.mcp.conftest import World, call, http_server_for, over_http, tool_error

LEDGER = """
jobs:
  - name: ledger
    endpoints:
      - name: close
        url: https://example.com/close
        interval: 60s
"""


async def _limited_to_shop(world: World) -> tuple[str, str]:
    """The secret of `shop-bot` (write, limited to `shop`) and a queued run of `ledger`."""
    now = datetime.now(UTC)
    async with world.store() as store:
        declared = parse_declarations(LEDGER, "ledger.yaml", [], env={})
        await apply_declarations(
            store.unit_of_work, None, declared, "ledger.yaml", actor="cli:ann@web-1", now=now
        )
        _, secret = await create_token(
            store.unit_of_work, "shop-bot", Scope.WRITE, "cli:ann@web-1", now, jobs=["shop"]
        )
        waker = InProcessWaker()
        ledger_run = await request_run(store.unit_of_work, waker, "ledger/close", "cli:ann", now)
        await waker.close()
    return secret, ledger_run.id


async def test_a_job_limited_token_s_tools_show_its_jobs_and_work_on_its_runs(
    world: World,
) -> None:
    secret, ledger_run = await _limited_to_shop(world)
    async with http_server_for(world, secret) as url, over_http(url, secret) as session:
        jobs = await call(session, "list_jobs")
        runs = await call(session, "list_runs")
        own = await call(session, "show_endpoint", endpoint="shop/stock")
        own_proposal = await call(session, "show_proposal", proposal_id=world.proposal_id)
        queued = await call(session, "run_now", endpoint="shop/stock")
        cancelled = await call(session, "cancel_run", run=queued["id"])
        retried = await call(session, "retry_run", run=world.run_id)
        cleared = await call(session, "clear_dag", run=world.run_id, node="prices")
        other = await tool_error(session, "show_endpoint", endpoint="ledger/close")
        other_write = await tool_error(session, "run_now", endpoint="ledger/close")
        other_run = [
            await tool_error(session, name, run=ledger_run) for name in ("cancel_run", "retry_run")
        ]
        other_clear = await tool_error(session, "clear_dag", run=ledger_run, node="close")
        blank = await tool_error(session, "list_runs", job=" ")
        applied = await tool_error(session, "apply_document", document=LEDGER)
        latest = await session.read_resource("cronpilot://endpoints/shop/stock/latest")

    assert [job["name"] for job in jobs["items"]] == ["shop"]
    assert {run["endpoint_id"] for run in runs["items"]} == {own["id"]}
    assert own_proposal["id"] == world.proposal_id
    assert cancelled["status"] == "cancelled"
    assert retried["trigger"] == "manual"
    assert cleared == {"cleared": "shop/prices"}
    assert other == other_write == "no endpoint 'ledger/close'"
    assert other_run == [f"no run '{ledger_run}'"] * 2 == [other_clear] * 2
    assert blank.startswith("job: String should match pattern")
    assert applied == "token:shop-bot is limited to jobs shop: this needs a token of every job"
    assert latest.contents
