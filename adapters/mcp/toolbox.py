"""Tools and resources put on the MCP server so that no call can crash it: each checks first
that the server's token is still live, and a cronpilot error comes back to the client as a
tool error (`isError`; a resource error) worded as the CLI's `error:` line. A tool takes the
arguments it declares and no other (`additionalProperties: false`): an argument it does not
know is a tool error naming it, never ignored, as a misspelt filter would widen a list.

An answer (a tool's or a resource's) may hold a stored response body nested up to
`MAX_DEPTH` levels, deeper than the SDK's serialiser (pydantic_core) writes or a pydantic
client parses (about 250): such an answer is written here, without recursion, as JSON text."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import ConfigDict, ValidationError, create_model

from cronpilot.adapters.error_line import error_line
from cronpilot.adapters.jsonvalue import dump_json, json_depth
from cronpilot.adapters.mcp.caller import Caller
from cronpilot.adapters.views.formats import tidy
from cronpilot.domain.errors import CronpilotError, NotFound

if TYPE_CHECKING:
    from mcp.server.mcpserver.context import Context

Call = TypeVar("Call", bound=Callable[..., Awaitable[Any]])

JSON_MIME = "application/json"

DEEPEST_STRUCTURED = 200
"""The deepest tool answer sent as structured content (and as the SDK's text of it): below
pydantic_core's limits on writing and parsing JSON (about 250 levels), with room for the
JSON-RPC message around it. A deeper one comes back as JSON text only (`_deep_answer`)."""


def _json_text(answer: object) -> str:
    """`answer` as JSON text at any depth, its floats rounded as the CLI's `--json` rounds."""
    return dump_json(tidy(answer))


def _tool_answer(answer: Any) -> Any:
    """What a tool hands the SDK: its answer as it is, unless nested too deep to serialise."""
    if isinstance(answer, dict) and json_depth(answer) > DEEPEST_STRUCTURED:
        return _deep_answer(answer)
    return answer


def _deep_answer(answer: dict[str, Any]) -> CallToolResult:
    # The whole answer is the text; the structured content (which the tool's output schema,
    # an object, requires) only says so: no client could parse the answer itself there.
    note = (
        f"nested deeper than {DEEPEST_STRUCTURED} levels, past what JSON parsers such as "
        "pydantic's take: the whole answer is this result's text, as JSON"
    )
    return CallToolResult(
        content=[TextContent(type="text", text=_json_text(answer))],
        structured_content={"in_text": note},
    )


def _error_result(line: str) -> CallToolResult:
    # Returned, not raised as the SDK's `ToolError`, which would prefix the line with
    # `Error executing tool NAME:` (and, for arguments, pydantic's report of many lines).
    return CallToolResult(content=[TextContent(type="text", text=line)], is_error=True)


def _tool_error(error: CronpilotError) -> CallToolResult:
    return _error_result(error_line(str(error)))


def _resource_error(error: CronpilotError) -> NoReturn:
    if isinstance(error, NotFound):
        raise ResourceNotFoundError(error_line(str(error))) from error
    raise ResourceError(error_line(str(error))) from error


class StrictArguments(ArgModelBase):
    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)


def _arguments_error(tool: Tool, error: ValidationError) -> str:
    """`argument: reason; …`, one line, each argument named as the client wrote it."""
    takes = ", ".join(sorted(tool.parameters.get("properties", {}))) or "none"
    reasons = []
    for problem in error.errors():
        where = ".".join(str(part) for part in problem["loc"]) or "arguments"
        if problem["type"] == "extra_forbidden":
            reasons.append(f"{where}: unknown argument ({tool.name} takes: {takes})")
        else:
            reasons.append(f"{where}: {problem['msg']}")
    return error_line("; ".join(reasons))


class StrictTool(Tool):
    """A tool whose arguments are checked before the SDK's own call: any error in them comes
    back as one line naming each argument."""

    @classmethod
    def of(cls, function: Callable[..., Awaitable[Any]], *, read_only: bool) -> StrictTool:
        tool = cls.from_function(function, annotations=ToolAnnotations(read_only_hint=read_only))
        assert isinstance(tool, StrictTool), "from_function makes an instance of its class"
        loose = tool.fn_metadata.arg_model
        fields: dict[str, Any] = {
            name: (field.annotation, field) for name, field in loose.model_fields.items()
        }
        strict = create_model(loose.__name__, __base__=StrictArguments, **fields)
        # The SDK reads both afresh on every call and listing.
        tool.fn_metadata.arg_model = strict
        tool.parameters = strict.model_json_schema(by_alias=True)
        return tool

    async def run(
        self, arguments: dict[str, Any], context: Context[Any, Any], convert_result: bool = False
    ) -> Any:
        try:
            self.fn_metadata.validate_arguments(arguments)
        except ValidationError as error:
            return _error_result(_arguments_error(self, error))
        return await super().run(arguments, context, convert_result)


class Toolbox:
    """Collects the tools and resources of one caller's server, then makes it (`server`)."""

    def __init__(self, caller: Caller) -> None:
        self.caller = caller
        self.tools: list[Tool] = []
        self._resources: list[Callable[[MCPServer[Any]], object]] = []

    def tool(self, *, read_only: bool) -> Callable[[Call], Call]:
        """Register the decorated coroutine as a tool: its name, docstring and annotated
        parameters are what the client sees."""

        def register(function: Call) -> Call:
            guarded = self._guarded(function, _tool_error, _tool_answer)
            self.tools.append(StrictTool.of(guarded, read_only=read_only))
            return function

        return register

    def resource(self, uri: str, name: str) -> Callable[[Call], Call]:
        """Register the decorated coroutine as a JSON resource (a template when `uri` has
        `{variables}`, one per parameter): what it returns is sent as JSON text."""

        def register(function: Call) -> Call:
            guarded = self._guarded(function, _resource_error, _json_text)
            self._resources.append(
                lambda server: server.resource(uri, name=name, mime_type=JSON_MIME)(guarded)
            )
            return function

        return register

    def server(
        self, name: str, *, instructions: str | None = None, version: str = ""
    ) -> MCPServer[Any]:
        """The MCP server offering what was registered, and no more."""
        server: MCPServer[Any] = MCPServer(
            name, instructions=instructions, version=version, tools=self.tools
        )
        for add in self._resources:
            add(server)
        return server

    def _guarded(
        self,
        function: Call,
        refused: Callable[[CronpilotError], Any],
        answered: Callable[[Any], Any],
    ) -> Callable[..., Awaitable[Any]]:
        # `wraps` keeps the signature and docstring the SDK reads the schema from.
        @functools.wraps(function)
        async def guarded(*args: Any, **kwargs: Any) -> Any:
            try:
                await self.caller.check()
                answer = await function(*args, **kwargs)
            except CronpilotError as error:
                return refused(error)
            return answered(answer)

        return guarded
