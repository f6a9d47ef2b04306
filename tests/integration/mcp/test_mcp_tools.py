"""Each MCP tool is a view of a use case: it calls one (a function, module or desk of
`cronpilot.usecases`), as the CLI command and the API route for the same thing do."""

from __future__ import annotations

import inspect
import types
from collections.abc import Awaitable, Callable
from typing import Any

from mcp.types import CallToolResult, TextContent

from cronpilot.adapters.bootstrap import build_approval_desk, build_proposal_desk
from cronpilot.adapters.mcp.caller import Caller
from cronpilot.adapters.mcp.context import McpContext
from cronpilot.adapters.mcp.decision_tools import add_decision_tools
from cronpilot.adapters.mcp.read_tools import add_read_tools
from cronpilot.adapters.mcp.server import build_server
from cronpilot.adapters.mcp.toolbox import Toolbox
from cronpilot.adapters.mcp.write_tools import add_write_tools
from cronpilot.adapters.wake import InProcessWaker
from cronpilot.domain.access.access import Principal, Scope
from tests.integration.mcp.conftest import DECISIONS, READ_TOOLS, WRITE_TOOLS
from tests.support.clock import FakeClock
from tests.support.memory_store import MemoryStore
from tests.support.settings import settings_for_tests

ADMIN = Principal("token:admin-bot", Scope.ADMIN)
Tool = Callable[..., Awaitable[Any]]


class Recording(Toolbox):
    """A toolbox that keeps each tool's own function (the one the server's wraps)."""

    def __init__(self, caller: Caller, ctx: McpContext) -> None:
        super().__init__(caller)
        self.functions: dict[str, Tool] = {}

    def tool(self, *, read_only: bool) -> Callable[[Tool], Tool]:
        register = super().tool(read_only=read_only)

        def record(function: Tool) -> Tool:
            self.functions[function.__name__] = function
            return register(function)

        return record


def _context() -> McpContext:
    store, waker, settings = MemoryStore(), InProcessWaker(), settings_for_tests()
    return McpContext(
        store=store,
        waker=waker,
        clock=FakeClock(),
        allowed_networks=[],
        floor_seconds=1.0,
        desk=build_proposal_desk(settings, store, waker),
        approvals=build_approval_desk(store, waker),
    )


async def _nobody(secret: str) -> Principal | None:
    return None


def _is_use_case(value: object) -> bool:
    if isinstance(value, types.ModuleType):
        return value.__name__.startswith("cronpilot.usecases.")
    module = value.__module__ if callable(value) else type(value).__module__
    return module.startswith("cronpilot.usecases.")


async def test_every_tool_calls_a_use_case() -> None:
    ctx = _context()
    box = Recording(Caller(ADMIN, "secret", _nobody), ctx)
    add_read_tools(box, ctx, ADMIN.reach)
    add_write_tools(box, ctx, ADMIN)
    add_decision_tools(box, ctx, ADMIN)
    server = box.server("test")

    listed = {tool.name for tool in await server.list_tools()}
    assert set(box.functions) == listed == READ_TOOLS | WRITE_TOOLS | DECISIONS
    for name, function in box.functions.items():
        named = inspect.getclosurevars(function)
        values = [*named.globals.values(), *named.nonlocals.values()]
        assert any(_is_use_case(v) for v in values), f"{name} calls no use case"


async def test_a_token_s_scope_decides_which_tools_the_server_offers() -> None:
    ctx = _context()
    offered = {}
    for who in (None, *(Principal(f"token:{s}-bot", s) for s in Scope)):
        server = build_server(ctx, Caller(who, None if who is None else "secret", _nobody))
        offered[None if who is None else who.scope] = {t.name for t in await server.list_tools()}
    assert offered == {
        None: READ_TOOLS,
        Scope.READ: READ_TOOLS,
        Scope.WRITE: READ_TOOLS | WRITE_TOOLS,
        Scope.ADMIN: READ_TOOLS | WRITE_TOOLS | DECISIONS,
    }


async def _live(secret: str) -> Principal | None:
    return ADMIN


async def test_every_tool_takes_its_own_arguments_and_no_other() -> None:
    server = build_server(_context(), Caller(ADMIN, "secret", _live))
    tools = await server.list_tools()
    assert {t.name for t in tools} == READ_TOOLS | WRITE_TOOLS | DECISIONS
    assert all(t.input_schema["additionalProperties"] is False for t in tools)

    async def refusal(name: str, **arguments: Any) -> str:
        result = await server.call_tool(name, arguments)
        assert isinstance(result, CallToolResult) and result.is_error
        [content] = result.content
        assert isinstance(content, TextContent)
        return content.text

    # A misspelt filter must not widen the list to every endpoint's runs.
    assert await refusal("list_runs", ref="shop/stock") == (
        "ref: unknown argument (list_runs takes: endpoint, job, limit, status, trigger)"
    )
    assert await refusal("list_jobs", job="shop") == (
        "job: unknown argument (list_jobs takes: none)"
    )
    assert await refusal("list_runs", limit=0) == (
        "limit: Input should be greater than or equal to 1"
    )
