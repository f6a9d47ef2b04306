"""A job-limited token's MCP server reaches its jobs only, by the same check as the API
(`usecases.access.confine`): tools of another job, or of every job at once, are refused in
one line."""

from __future__ import annotations

from datetime import UTC, datetime

from cronpilot.adapters.jobs_file import parse_declarations
from cronpilot.domain.access import Scope
from cronpilot.usecases.access import create_token
from cronpilot.usecases.declarations import apply_declarations
from tests.mcp.conftest import World, call, http_server_for, over_http, tool_error

LEDGER = """
jobs:
  - name: ledger
    endpoints:
      - name: close
        url: https://example.com/close
        interval: 60s
"""


async def _limited_to_shop(world: World) -> str:
    now = datetime.now(UTC)
    async with world.store() as store:
        declared = parse_declarations(LEDGER, "ledger.yaml", [], env={})
        await apply_declarations(
            store.unit_of_work, None, declared, "ledger.yaml", actor="cli:ann@web-1", now=now
        )
        _, secret = await create_token(
            store.unit_of_work, "shop-bot", Scope.WRITE, "cli:ann@web-1", now, jobs=["shop"]
        )
    return secret


async def test_a_job_limited_token_s_tools_reach_its_jobs_only(world: World) -> None:
    secret = await _limited_to_shop(world)
    async with http_server_for(world, secret) as url, over_http(url, secret) as session:
        own = await call(session, "show_endpoint", endpoint="shop/stock")
        own_run = await call(session, "show_run", run_id=world.run_id)
        own_proposal = await call(session, "show_proposal", proposal_id=world.proposal_id)
        other = await tool_error(session, "show_endpoint", endpoint="ledger/close")
        other_write = await tool_error(session, "run_now", endpoint="ledger/close")
        every_job = await tool_error(session, "list_jobs")
        latest = await session.read_resource("cronpilot://endpoints/shop/stock/latest")

    assert own["ref"] == "shop/stock"
    assert own_run["id"] == world.run_id and own_proposal["id"] == world.proposal_id
    assert other == "token:shop-bot may not reach job ledger: it is limited to shop"
    assert other_write == other
    assert every_job == "token:shop-bot is limited to jobs shop: name one (job=…)"
    assert latest.contents
