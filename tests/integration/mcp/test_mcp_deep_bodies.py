"""A stored body nested as deep as a store keeps (`MAX_DEPTH`), deeper than the SDK's
serialiser (pydantic_core) goes, comes back whole through `show_run` and the latest-response
resource, over `cronpilot mcp`'s stdio, as the CLI and the API give it."""

from __future__ import annotations

from mcp.types import CallToolResult, TextContent, TextResourceContents

from cronpilot.adapters.jsonvalue import dump_json
from cronpilot.adapters.sql.store import SqlStore
from cronpilot.adapters.views.formats import tidy
from cronpilot.domain.access.access import Scope
from tests.integration.mcp.conftest import World, over_stdio
from tests.support.deep_json import nested, store_body

DEPTH = 500


async def test_a_deep_body_comes_back_whole_from_show_run_and_the_latest_resource(
    world: World,
) -> None:
    async with world.store() as store:
        assert isinstance(store, SqlStore)
        await store_body(store, world.run_id, dump_json(nested(DEPTH)))

    async with over_stdio(world, Scope.READ) as session:
        result = await session.call_tool("show_run", {"run_id": world.run_id})
        latest = await session.read_resource("cronpilot://endpoints/shop/stock/latest")

    # Whole, and rounded as the CLI's `--json` rounds (`{"leaf":0.3}` at the bottom).
    body = f'"body":{dump_json(tidy(nested(DEPTH)))}'
    assert isinstance(result, CallToolResult)
    assert not result.is_error, result.content
    [content] = result.content
    assert isinstance(content, TextContent)
    assert content.text.startswith(f'{{"id":"{world.run_id}",')
    assert body in content.text
    assert content.text.endswith(',"endpoint":"shop/stock"}')
    assert result.structured_content is not None
    assert "whole answer is this result's text" in result.structured_content["in_text"]
    [resource] = latest.contents
    assert isinstance(resource, TextResourceContents)
    assert resource.text.startswith('{"endpoint":"shop/stock","run":{')
    assert body in resource.text
