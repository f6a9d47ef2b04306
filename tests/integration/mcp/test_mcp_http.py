"""`cronpilot mcp --http` in process on a free loopback port, driven by the SDK's own
streamable HTTP client: only the holder of the server's token gets in, its scope decides the
tools, and the decisions are recorded for it."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
from starlette.responses import PlainTextResponse

from cronpilot.adapters.mcp.server import BearerGate
from cronpilot.domain.access.access import Principal, Scope
from cronpilot.domain.errors import TokenExpired
from cronpilot.usecases.access import list_audit, revoke_token
from tests.integration.api.conftest import bearer
from tests.integration.mcp.conftest import (
    BODY,
    DECISIONS,
    READ_TOOLS,
    WRITE_TOOLS,
    World,
    call,
    http_server,
    over_http,
    tool_error,
    tool_names,
)
from tests.support.superseding import supersede

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "1"},
    },
}


async def test_a_read_token_reads_and_sees_no_write_tool(world: World) -> None:
    secret = world.secrets[Scope.READ]
    async with http_server(world, Scope.READ) as url:
        async with over_http(url, secret) as session:
            names = await tool_names(session)
            run = await call(session, "show_run", run_id=world.run_id)
            unknown = await tool_error(session, "list_runs", endpoint="shop/nope")
            latest = await session.read_resource("cronpilot://endpoints/shop/stock/latest")
        # Another token, even an admin's, opens no door: the server acts for its own.
        async with httpx.AsyncClient(headers={"Accept": "application/json"}) as anyone:
            refused = [
                await anyone.post(url, json=INITIALIZE, headers=headers)
                for headers in ({}, bearer(world.secrets[Scope.ADMIN]), {"Authorization": secret})
            ]

    assert names == READ_TOOLS
    assert run["body"] == BODY
    assert unknown == "no endpoint 'shop/nope'"
    assert world.run_id in str(latest.contents)
    assert [r.status_code for r in refused] == [401, 401, 401]
    assert {r.headers["www-authenticate"] for r in refused} == {"Bearer"}


async def test_an_admin_token_decides_and_every_decision_is_recorded_for_it(
    world: World,
) -> None:
    async with (
        http_server(world, Scope.ADMIN) as url,
        over_http(url, world.secrets[Scope.ADMIN]) as session,
    ):
        names = await tool_names(session)
        approved = await call(session, "approve_proposal", proposal_id=world.proposal_id)
        again = await tool_error(session, "approve_proposal", proposal_id=world.proposal_id)
        blank = await tool_error(
            session, "reject_proposal", proposal_id=world.proposal_id, reason=" "
        )
        no_gate = await tool_error(session, "approve_gate", approval_id="nope")
        endpoint = await call(session, "show_endpoint", endpoint="shop/stock")

    assert names == READ_TOOLS | WRITE_TOOLS | DECISIONS
    assert (approved["status"], approved["decided_by"]) == ("applied", "token:admin-bot")
    assert again == f"proposal {world.proposal_id} is applied, not pending"
    assert "reason" in blank
    assert no_gate == "no approval 'nope'"
    assert endpoint["interval_hint"]["interval_seconds"] == 120.0
    async with world.store() as store:
        entries = await list_audit(store.reading, actor="token:admin-bot")
    assert [(e.action, e.target) for e in entries] == [("approve", world.proposal_id)]


async def test_a_superseded_proposal_is_shown_with_the_newer_and_cannot_be_decided(
    world: World,
) -> None:
    async with world.store() as store:
        older = await store.planner.get_proposal(world.proposal_id)
        newer = await supersede(store, older.id, older.created_at)
    async with (
        http_server(world, Scope.ADMIN) as url,
        over_http(url, world.secrets[Scope.ADMIN]) as session,
    ):
        listed = await call(session, "list_proposals", status="superseded")
        shown = await call(session, "show_proposal", proposal_id=older.id)
        approving = await tool_error(session, "approve_proposal", proposal_id=older.id)
        rejecting = await tool_error(session, "reject_proposal", proposal_id=older.id, reason="no")

    assert [p["id"] for p in listed["items"]] == [older.id]
    assert (shown["status"], shown["superseded_by"]) == ("superseded", newer.id)
    for refused in (approving, rejecting):
        assert refused == f"proposal {older.id} is superseded by proposal {newer.id}, not pending"


async def test_a_token_revoked_while_the_server_runs_gets_401(world: World) -> None:
    secret = world.secrets[Scope.WRITE]
    async with (
        http_server(world, Scope.WRITE) as url,
        httpx.AsyncClient(headers={"Accept": "application/json, text/event-stream"}) as client,
    ):
        before = await client.post(url, json=INITIALIZE, headers=bearer(secret))
        async with world.store() as store:
            await revoke_token(store.unit_of_work, "write-bot", "cli:ann@web-1", datetime.now(UTC))
        after = await client.post(url, json=INITIALIZE, headers=bearer(secret))

    assert before.status_code == 200
    assert after.status_code == 401
    assert after.json() == {
        "error": "this server's token was revoked: restart it with a live token"
    }


async def test_an_expired_token_gets_401_saying_when_it_expired() -> None:
    async def expired(_secret: str) -> Principal | None:
        raise TokenExpired("ci", "2030-01-01 00:00:00 UTC")

    gate = BearerGate(PlainTextResponse("open"), "s3cret", expired)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=gate), base_url="http://127.0.0.1"
    ) as client:
        refused = await client.post("/mcp", headers=bearer("s3cret"))

    assert refused.status_code == 401
    assert refused.json() == {"error": "token 'ci' expired at 2030-01-01 00:00:00 UTC"}
