"""The tools every MCP client gets: jobs, endpoints, runs, proposals, sessions, output schemas,
the graph and approvals, read through the CLI's and the API's queries and shown in their JSON
shapes (secrets masked)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated, Any

from pydantic import Field

from cronpilot.adapters.mcp.context import McpContext
from cronpilot.adapters.mcp.toolbox import Toolbox
from cronpilot.adapters.search.views import result_view
from cronpilot.adapters.views.approvals import approval_view
from cronpilot.adapters.views.catalog import endpoint_view, job_view
from cronpilot.adapters.views.graph import job_graphs_view
from cronpilot.adapters.views.outputs import output_view
from cronpilot.adapters.views.planner import proposal_view, session_view
from cronpilot.adapters.views.runs import run_view
from cronpilot.domain.access.access import Reach
from cronpilot.domain.model import RunStatus, RunTrigger
from cronpilot.domain.planning.approvals import ApprovalState
from cronpilot.domain.planning.planning import ProposalStatus
from cronpilot.domain.ports import ReadingFactory
from cronpilot.domain.search.search import MAX_LIMIT
from cronpilot.usecases import search
from cronpilot.usecases.queries import approvals, catalog, graph, outputs, planner, runs
from cronpilot.usecases.queries.catalog import E

_GIVEN = r"\S"
"""A name or id is not blank: a blank filter would be read as no filter."""
Endpoint = Annotated[
    str,
    Field(
        pattern=_GIVEN,
        description="`job/endpoint`, or an endpoint id (a unique prefix of 4+ characters).",
    ),
]
JobName = Annotated[str, Field(pattern=_GIVEN, description="The job's name.")]
JobFilter = Annotated[str | None, Field(pattern=_GIVEN, description="Only this job's.")]
EndpointFilter = Annotated[
    str | None, Field(pattern=_GIVEN, description="Only this endpoint's (`job/endpoint`).")
]
Limit = Annotated[int, Field(ge=1, le=500, description="How many, newest first.")]
AnId = Annotated[
    str, Field(pattern=_GIVEN, description="An id from the list tool, or a unique prefix of 4+.")
]


View = Callable[[E, str], dict[str, Any]]


async def listed(reading: ReadingFactory, items: Sequence[E], view: View[E]) -> dict[str, Any]:
    """`{"items": [...]}`: each item in its view, with its endpoint's `job/endpoint`."""
    return {"items": [view(*pair) for pair in await catalog.beside_refs(reading, items)]}


async def shown(reading: ReadingFactory, item: E, view: View[E]) -> dict[str, Any]:
    """One item in its view, with its endpoint's `job/endpoint`."""
    return view(item, await catalog.ref_of(reading, item))


def add_read_tools(box: Toolbox, ctx: McpContext, reach: Reach) -> None:
    """The tools every caller gets, each of whose queries is handed `reach`."""
    reading = ctx.store.reading

    @box.tool(read_only=True)
    async def list_jobs() -> dict[str, Any]:
        """Every job (a named group of endpoints) with how many endpoints it holds."""
        found = await catalog.list_jobs(reading, reach=reach)
        return {"items": [job_view(s.job, s.endpoint_count) for s in found]}

    @box.tool(read_only=True)
    async def search_endpoints(
        query: Annotated[str, Field(description="What the endpoint should do or tell.")],
        job: JobFilter = None,
        limit: Annotated[int, Field(ge=1, le=MAX_LIMIT, description="How many.")] = 10,
    ) -> dict[str, Any]:
        """Endpoints that best answer a question or an intent, best first, each score with its
        semantic, lexical and graph parts, and the query's words matched by meaning."""
        result = await search.search_endpoints(
            reading,
            ctx.embedder,
            query,
            uow=ctx.store.unit_of_work,
            now=ctx.clock.now(),
            job=job,
            limit=limit,
            cache=ctx.search_cache,
            reach=reach,
        )
        return result_view(result)

    @box.tool(read_only=True)
    async def show_job(job: JobName) -> dict[str, Any]:
        """One job, with the refs of its endpoints."""
        found, endpoints = await catalog.show_job(reading, job, reach=reach)
        return {**job_view(found, len(endpoints)), "endpoint_refs": [e.ref for e in endpoints]}

    @box.tool(read_only=True)
    async def list_endpoints(job: JobFilter = None) -> dict[str, Any]:
        """Endpoints (one HTTP call on a schedule each) with their schedule in force, next
        run and why, and last run."""
        states = await catalog.list_endpoints(reading, job, reach=reach)
        return {"items": [endpoint_view(s.endpoint, s.last_run) for s in states]}

    @box.tool(read_only=True)
    async def show_endpoint(endpoint: Endpoint) -> dict[str, Any]:
        """One endpoint in full: request, schedule, clamps, hints, pause, last run."""
        state = await catalog.show_endpoint(reading, endpoint, reach=reach)
        return endpoint_view(state.endpoint, state.last_run)

    @box.tool(read_only=True)
    async def list_runs(
        endpoint: EndpointFilter = None,
        job: JobFilter = None,
        status: RunStatus | None = None,
        trigger: RunTrigger | None = None,
        limit: Limit = 20,
    ) -> dict[str, Any]:
        """Runs newest slot first, without their bodies (show_run has them)."""
        query = runs.RunQuery(job, endpoint, status, trigger)
        page = await runs.page_runs(reading, query, limit, reach=reach)
        return {"items": [run_view(run, with_body=False) for run in page.items]}

    @box.tool(read_only=True)
    async def show_run(run_id: AnId) -> dict[str, Any]:
        """One run in full: the request sent, attempts, the response body or why none."""
        run, endpoint = await runs.show_run(reading, run_id, reach=reach)
        return {**run_view(run, with_body=True), "endpoint": endpoint.ref}

    @box.tool(read_only=True)
    async def list_proposals(
        status: ProposalStatus | None = None,
        job: JobFilter = None,
        endpoint: EndpointFilter = None,
        limit: Limit = 20,
    ) -> dict[str, Any]:
        """Schedule changes the planner proposed: the change, why, and what became of it."""
        page = await planner.list_proposals(
            reading, status=status, job=job, endpoint=endpoint, limit=limit, reach=reach
        )
        return await listed(reading, page.items, proposal_view)

    @box.tool(read_only=True)
    async def show_proposal(proposal_id: AnId) -> dict[str, Any]:
        """One proposal: who proposed it in which session, who decided, the outcome."""
        found = await planner.show_proposal(reading, proposal_id, reach=reach)
        return await shown(reading, found, proposal_view)

    @box.tool(read_only=True)
    async def list_sessions(endpoint: EndpointFilter = None, limit: Limit = 10) -> dict[str, Any]:
        """Planner analyses newest first, each with its tool calls, tokens and reasoning."""
        page = await planner.list_sessions(reading, endpoint, limit, reach=reach)
        return await listed(reading, page.items, session_view)

    @box.tool(read_only=True)
    async def show_session(session_id: AnId) -> dict[str, Any]:
        """One analysis: the tool calls in order, tokens, reasoning, outcome."""
        found = await planner.show_session(reading, session_id, reach=reach)
        return await shown(reading, found, session_view)

    @box.tool(read_only=True)
    async def show_schema(
        endpoint: Endpoint,
        drift: Annotated[int, Field(ge=0, le=1000, description="Drift events, newest first.")] = 10,
    ) -> dict[str, Any]:
        """The JSON Schema learnt from an endpoint's responses (with counts) and its drift."""
        return output_view(await outputs.show_output(reading, endpoint, drift, reach=reach))

    @box.tool(read_only=True)
    async def show_graph(job: JobFilter = None) -> dict[str, Any]:
        """The tool graph per job: nodes, DAG layers, and edges with type (dependency,
        contains, provides, sequence), source (observed, inferred, template), weight, count."""
        return job_graphs_view(await graph.job_graphs(reading, job, reach=reach))

    @box.tool(read_only=True)
    async def list_approvals(
        state: ApprovalState | None = None,
        job: JobFilter = None,
        endpoint: EndpointFilter = None,
        limit: Limit = 20,
    ) -> dict[str, Any]:
        """Approval gates: DAG dependants waiting for an admin, and what became of them."""
        page = await approvals.list_approvals(
            reading, state=state, job=job, endpoint=endpoint, limit=limit, reach=reach
        )
        return await listed(reading, page.items, approval_view)
