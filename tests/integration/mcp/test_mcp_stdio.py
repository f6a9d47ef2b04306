"""`cronpilot mcp` over stdio, as an MCP client starts it, driven by the SDK's own client: a
token's scope decides the tools, every write is recorded for the token, errors come back as
tool errors worded as the CLI's, and secrets stay masked."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from mcp import MCPError
from mcp.types import TextResourceContents

from cronpilot.domain.access.access import Scope
from cronpilot.usecases.access import list_audit, revoke_token
from tests.e2e.conftest import make_cli
from tests.integration.mcp.conftest import (
    BODY,
    JOBS,
    READ_TOOLS,
    SECRETS_IN_JOBS,
    WRITE_TOOLS,
    World,
    call,
    over_stdio,
    tool_error,
    tool_names,
)

MORE_JOBS = (
    JOBS
    + """
      - name: audit
        url: https://example.com/audit
        interval: 300s
"""
)


async def _resource(session: object, uri: str) -> object:
    result = await session.read_resource(uri)  # type: ignore[attr-defined]
    [content] = result.contents
    assert isinstance(content, TextResourceContents)
    assert content.mime_type == "application/json"
    return json.loads(content.text)


async def test_a_read_token_reads_through_tools_and_resources_with_secrets_masked(
    world: World,
) -> None:
    async with over_stdio(world, Scope.READ) as session:
        names = await tool_names(session)
        endpoints = await call(session, "list_endpoints", job="shop")
        one = await call(session, "show_endpoint", endpoint="shop/stock")
        runs = await call(session, "list_runs", endpoint="shop/stock")
        run = await call(session, "show_run", run_id=world.run_id[:8])
        proposals = await call(session, "list_proposals", status="pending")
        schema = await call(session, "show_schema", endpoint="shop/stock")
        graph = await call(session, "show_graph", job="shop")
        jobs = await call(session, "list_jobs")
        found = await call(session, "search_endpoints", query="stock levels", limit=1)
        empty = await tool_error(session, "search_endpoints", query=" ")
        templates = (await session.list_resource_templates()).resource_templates
        latest = await _resource(session, "cronpilot://endpoints/shop/stock/latest")
        learnt = await _resource(session, "cronpilot://endpoints/shop/stock/schema")
        unknown = await tool_error(session, "show_endpoint", endpoint="shop/nope")
        with pytest.raises(MCPError, match=r"^no endpoint 'shop/nope'$"):
            await session.read_resource("cronpilot://endpoints/shop/nope/latest")

    assert names == READ_TOOLS
    assert [e["ref"] for e in endpoints["items"]] == ["shop/prices", "shop/stock"]
    assert one["url"] == "https://example.com/stock?api_key=****"
    assert one["headers"] == {"Authorization": "****"}
    assert [r["id"] for r in runs["items"]] == [world.run_id]
    assert (run["endpoint"], run["body"]) == ("shop/stock", BODY)
    assert [p["id"] for p in proposals["items"]] == [world.proposal_id]
    assert set(schema["schema"]["properties"]) == set(BODY)
    assert graph["shop"]["layers"] == [["shop/stock"], ["shop/prices"]]
    assert jobs["items"][0]["endpoints"] == 2
    assert [hit["endpoint"] for hit in found["items"]] == ["shop/stock"]
    assert "the query is empty" in empty
    assert {t.uri_template for t in templates} == {
        "cronpilot://endpoints/{job}/{name}/latest",
        "cronpilot://endpoints/{job}/{name}/schema",
    }
    assert latest["run"]["id"] == world.run_id
    assert latest["run"]["body"] == BODY
    assert learnt == schema
    shown = json.dumps([endpoints, one, runs, run, latest])
    assert not [secret for secret in SECRETS_IN_JOBS if secret in shown]
    # The CLI's error line for the same failure, word for word.
    cli = make_cli(world.home, world.database_url, CRONPILOT_SECRET_KEY=world.key)
    assert cli("endpoints", "show", "shop/nope", expect=1).stderr == f"error: {unknown}\n"


async def test_without_a_token_the_server_offers_the_read_tools_only(world: World) -> None:
    async with over_stdio(world, None) as session:
        assert await tool_names(session) == READ_TOOLS
        assert (await call(session, "show_job", job="shop"))["endpoint_refs"] == [
            "shop/prices",
            "shop/stock",
        ]


async def test_a_write_token_adds_the_write_tools_each_recorded_for_the_token(
    world: World,
) -> None:
    async with over_stdio(world, Scope.WRITE) as session:
        names = await tool_names(session)
        past = await tool_error(
            session,
            "pause_endpoint",
            endpoint="shop/stock",
            reason="x",
            until="2001-01-01T00:00:00Z",
        )
        far = await tool_error(
            session,
            "pause_endpoint",
            endpoint="shop/stock",
            reason="x",
            until="9999-12-31T23:59:59+14:00",
        )
        untill = await tool_error(
            session, "pause_endpoint", endpoint="shop/stock", reason="x", untill="2030-01-01"
        )
        paused = await call(session, "pause_endpoint", endpoint="shop/stock", reason="upkeep")
        resumed = await call(session, "resume_endpoint", endpoint="shop/stock")
        queued = await call(session, "run_now", endpoint="shop/stock")
        preview = await call(session, "apply_document", document=MORE_JOBS, dry_run=True)
        applied = await call(session, "apply_document", document=MORE_JOBS)
        invalid = await tool_error(
            session, "apply_document", document=MORE_JOBS.replace("300s", "often")
        )
        async with world.store() as store:
            await revoke_token(store.unit_of_work, "write-bot", "cli:ann@web-1", datetime.now(UTC))
        revoked = await tool_error(session, "list_jobs")

    assert names == READ_TOOLS | WRITE_TOOLS
    assert past == "until: is not in the future"
    assert far == "until: is more than ten years ahead"
    assert untill.startswith("untill: unknown argument (pause_endpoint takes: endpoint,")
    assert (paused["paused"]["reason"], paused["paused"]["by"]) == ("upkeep", "token:write-bot")
    assert resumed["paused"] is None
    assert (queued["status"], queued["requested_by"]) == ("queued", "token:write-bot")
    assert [(c["ref"], c["outcome"]) for c in preview["changes"]][-1] == ("shop/audit", "create")
    assert applied["created"] == ["shop/audit"]
    assert invalid.startswith("document: job 'shop' endpoint 'audit'"), invalid
    assert revoked == "token:write-bot was revoked: restart the MCP server with a live token"
    async with world.store() as store:
        entries = await list_audit(store.reading, actor="token:write-bot")
    assert [(e.action, e.target) for e in entries] == [
        ("apply", "document"),
        ("run_now", "shop/stock"),
        ("resume", "shop/stock"),
        ("pause", "shop/stock"),
    ]


def test_a_secret_that_opens_no_live_token_stops_the_server_at_start(world: World) -> None:
    cli = make_cli(world.home, world.database_url, CRONPILOT_SECRET_KEY=world.key)
    bogus = "cp_" + "x" * 43
    refused = cli("mcp", "--token", bogus, expect=2)
    # After the INFO lines of a server's start (the store opened).
    assert refused.stderr.splitlines()[-1] == (
        "error: --token (or CRONPILOT_MCP_TOKEN): not a live API token "
        "(make one with `cronpilot tokens create`)"
    )
    assert bogus not in refused.stdout + refused.stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--http"], "give --token or CRONPILOT_MCP_TOKEN"),
        (["--http", "--token", "t", "--host", "0.0.0.0"], "--insecure-http"),
        (["--http", "--token", "t", "--host", "192.0.2.1", "--tls-key", "k.pem"], "both or"),
    ],
)
def test_http_needs_a_token_and_refuses_clear_text_off_loopback(
    world: World, args: list[str], says: str
) -> None:
    cli = make_cli(world.home, world.database_url)
    [line] = cli("mcp", *args, expect=2).stderr.splitlines()
    assert line.startswith("error: ")
    assert says in line
