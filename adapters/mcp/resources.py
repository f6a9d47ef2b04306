"""Resources: an endpoint's latest response and the schema learnt from its responses, as
JSON documents an agent can attach to a conversation."""

from __future__ import annotations

from typing import Any

from cronpilot.adapters.mcp.context import McpContext
from cronpilot.adapters.mcp.toolbox import Toolbox
from cronpilot.adapters.views.outputs import output_view
from cronpilot.adapters.views.runs import run_view
from cronpilot.domain.access.access import Reach
from cronpilot.usecases.queries import catalog, outputs

LATEST = "cronpilot://endpoints/{job}/{name}/latest"
SCHEMA = "cronpilot://endpoints/{job}/{name}/schema"


def add_resources(box: Toolbox, ctx: McpContext, reach: Reach) -> None:
    reading = ctx.store.reading

    @box.resource(LATEST, "latest response")
    async def latest(job: str, name: str) -> dict[str, Any]:
        """The endpoint's newest run with its response body (or why it has none); `run` is
        null before its first run."""
        state = await catalog.show_endpoint(reading, f"{job}/{name}", reach=reach)
        run = state.last_run
        view = None if run is None else run_view(run, with_body=True)
        return {"endpoint": state.endpoint.ref, "run": view}

    @box.resource(SCHEMA, "learnt output schema")
    async def schema(job: str, name: str) -> dict[str, Any]:
        """The JSON Schema learnt from the endpoint's responses, with counts, and its drift."""
        return output_view(await outputs.show_output(reading, f"{job}/{name}", reach=reach))
