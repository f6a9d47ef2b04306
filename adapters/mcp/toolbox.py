"""Tools and resources put on the MCP server so that no call can crash it: each checks first
that the server's token is still live, and a cronpilot error comes back to the client as a
tool error (`isError`; a resource error) worded as the CLI's `error:` line."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any, NoReturn, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError
from mcp.types import CallToolResult, TextContent, ToolAnnotations

from cronpilot.adapters.error_line import error_line
from cronpilot.adapters.mcp.caller import Caller
from cronpilot.domain.errors import CronpilotError, NotFound

Call = TypeVar("Call", bound=Callable[..., Awaitable[Any]])

JSON_MIME = "application/json"


def _tool_error(error: CronpilotError) -> CallToolResult:
    # Returned, not raised as the SDK's `ToolError`, which would prefix the line with
    # `Error executing tool NAME:`.
    line = error_line(str(error))
    return CallToolResult(content=[TextContent(type="text", text=line)], is_error=True)


def _resource_error(error: CronpilotError) -> NoReturn:
    if isinstance(error, NotFound):
        raise ResourceNotFoundError(error_line(str(error))) from error
    raise ResourceError(error_line(str(error))) from error


class Toolbox:
    def __init__(self, server: MCPServer[Any], caller: Caller) -> None:
        self.server = server
        self.caller = caller

    def tool(self, *, read_only: bool) -> Callable[[Call], Call]:
        """Register the decorated coroutine as a tool: its name, docstring and annotated
        parameters are what the client sees."""

        def register(function: Call) -> Call:
            guarded = self._guarded(function, _tool_error)
            self.server.add_tool(guarded, annotations=ToolAnnotations(read_only_hint=read_only))
            return function

        return register

    def resource(self, uri: str, name: str) -> Callable[[Call], Call]:
        """Register the decorated coroutine as a JSON resource (a template when `uri` has
        `{variables}`, one per parameter)."""

        def register(function: Call) -> Call:
            guarded = self._guarded(function, _resource_error)
            self.server.resource(uri, name=name, mime_type=JSON_MIME)(guarded)
            return function

        return register

    def _guarded(
        self, function: Call, refused: Callable[[CronpilotError], Any]
    ) -> Callable[..., Awaitable[Any]]:
        # `wraps` keeps the signature and docstring the SDK reads the schema from.
        @functools.wraps(function)
        async def guarded(*args: Any, **kwargs: Any) -> Any:
            try:
                await self.caller.check()
                return await function(*args, **kwargs)
            except CronpilotError as error:
                return refused(error)

        return guarded
