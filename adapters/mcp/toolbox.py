"""Tools and resources put on the MCP server so that no call can crash it: each checks first
that the server's token is still live, and a cronpilot error comes back to the client as a
tool error (`isError`; a resource error) worded as the CLI's `error:` line."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError
from mcp.types import CallToolResult, TextContent, ToolAnnotations

from cronpilot.adapters.error_line import error_line
from cronpilot.adapters.mcp.caller import Caller
from cronpilot.domain.errors import CronpilotError, NotFound

Call = TypeVar("Call", bound=Callable[..., Awaitable[Any]])

JSON_MIME = "application/json"


class Toolbox:
    def __init__(self, server: MCPServer[Any], caller: Caller) -> None:
        self.server = server
        self.caller = caller

    def tool(self, *, read_only: bool) -> Callable[[Call], Call]:
        """Register the decorated coroutine as a tool: its name, docstring and annotated
        parameters are what the client sees."""

        def register(function: Call) -> Call:
            @functools.wraps(function)
            async def call(*args: Any, **kwargs: Any) -> Any:
                try:
                    await self.caller.check()
                    return await function(*args, **kwargs)
                except CronpilotError as error:
                    # Returned, not raised as the SDK's `ToolError`: that would prefix the
                    # line with `Error executing tool NAME:`.
                    line = error_line(str(error))
                    return CallToolResult(
                        content=[TextContent(type="text", text=line)], is_error=True
                    )

            self.server.add_tool(call, annotations=ToolAnnotations(read_only_hint=read_only))
            return function

        return register

    def resource(self, uri: str, name: str) -> Callable[[Call], Call]:
        """Register the decorated coroutine as a JSON resource (a template when `uri` has
        `{variables}`, one per parameter)."""

        def register(function: Call) -> Call:
            @functools.wraps(function)
            async def read(*args: Any, **kwargs: Any) -> Any:
                try:
                    await self.caller.check()
                    return await function(*args, **kwargs)
                except NotFound as error:
                    raise ResourceNotFoundError(error_line(str(error))) from error
                except CronpilotError as error:
                    raise ResourceError(error_line(str(error))) from error

            self.server.resource(uri, name=name, mime_type=JSON_MIME)(read)
            return function

        return register
