"""The tools of a server started with a `write` token: pause and resume (an endpoint or a job),
run now, cancel and retry a run, clear a DAG run from a node and apply a declaration document,
each through the CLI's and the API's use case, recorded for the token (`token:NAME`) in the
audit log and on what it changed."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import Field

from cronpilot.adapters.jobs_file import MAX_FILE_BYTES, parse_declarations
from cronpilot.adapters.mcp.context import McpContext
from cronpilot.adapters.mcp.read_tools import AnId, Endpoint, JobName
from cronpilot.adapters.mcp.toolbox import Toolbox
from cronpilot.adapters.views.catalog import endpoint_view, job_pause_view, report_view
from cronpilot.adapters.views.declarations import changes_view
from cronpilot.adapters.views.runs import retry_view, run_view
from cronpilot.domain.access.access import Principal
from cronpilot.domain.errors import InvalidConfig
from cronpilot.domain.model import Pause
from cronpilot.usecases import declarations, run_control, run_requests, schedule
from cronpilot.usecases.queries.reach import check_target

DOCUMENT_SOURCE = "document"
"""How messages name an applied document (`cronpilot apply` names its file)."""


def add_write_tools(box: Toolbox, ctx: McpContext, who: Principal) -> None:
    """The write tools for `who`, each refusing what lies out of its reach as what does not
    exist."""
    actor, reach, reading = who.actor, who.reach, ctx.store.reading

    @box.tool(read_only=False)
    async def pause_endpoint(
        endpoint: Endpoint,
        reason: Annotated[str, Field(min_length=1, max_length=500, pattern=r"\S")],
        until: Annotated[
            datetime | None,
            Field(description="RFC 3339 with an offset; absent: until resumed."),
        ] = None,
    ) -> dict[str, Any]:
        """Stop an endpoint's runs until a time, or until resume_endpoint; a pause wins over
        every schedule and hint."""
        await check_target(reading, reach, endpoint=endpoint)
        paused = await schedule.pause_endpoint(
            ctx.store.unit_of_work,
            endpoint,
            Pause(" ".join(reason.split()), until),
            actor,
            ctx.clock.now(),
        )
        return endpoint_view(paused, None)

    @box.tool(read_only=False)
    async def resume_endpoint(endpoint: Endpoint) -> dict[str, Any]:
        """Lift a pause: the endpoint is re-planned from its baseline and hints."""
        await check_target(reading, reach, endpoint=endpoint)
        resumed = await schedule.resume_endpoint(
            ctx.store.unit_of_work, ctx.waker, endpoint, actor, ctx.clock.now()
        )
        return endpoint_view(resumed, None)

    @box.tool(read_only=False)
    async def pause_job(
        job: JobName,
        reason: Annotated[str, Field(min_length=1, max_length=500, pattern=r"\S")],
        until: Annotated[
            datetime | None,
            Field(description="RFC 3339 with an offset; absent: until resumed."),
        ] = None,
    ) -> dict[str, Any]:
        """Stop every endpoint of a job, and the DAG runs inside it, until a time or until
        resume_job; the endpoints' own pauses stay underneath."""
        await check_target(reading, reach, job=job)
        paused = await schedule.pause_job(
            ctx.store.unit_of_work,
            job,
            Pause(" ".join(reason.split()), until),
            actor,
            ctx.clock.now(),
        )
        return job_pause_view(paused)

    @box.tool(read_only=False)
    async def resume_job(job: JobName) -> dict[str, Any]:
        """Lift a job's pause: its endpoints run again as their own pauses and plans say."""
        await check_target(reading, reach, job=job)
        resumed = await schedule.resume_job(
            ctx.store.unit_of_work, ctx.waker, job, actor, ctx.clock.now()
        )
        return job_pause_view(resumed)

    @box.tool(read_only=False)
    async def run_now(endpoint: Endpoint) -> dict[str, Any]:
        """Queue one run due now (trigger `manual`), made by a scheduler worker; its schedule
        is left as it is. Follow it with show_run."""
        await check_target(reading, reach, endpoint=endpoint)
        run = await run_requests.request_run(
            ctx.store.unit_of_work, ctx.waker, endpoint, actor, ctx.clock.now()
        )
        return run_view(run, with_body=False)

    @box.tool(read_only=False)
    async def cancel_run(run: AnId) -> dict[str, Any]:
        """Cancel a run: a queued one never starts; a running one is cut short by the worker
        holding it and recorded `cancelled`. A finished run is refused."""
        await check_target(reading, reach, run=run)
        cancelled = await run_control.cancel_run(
            ctx.store.unit_of_work, run, actor, ctx.clock.now()
        )
        return run_view(cancelled, with_body=False)

    @box.tool(read_only=False)
    async def retry_run(run: AnId) -> dict[str, Any]:
        """Queue a new manual run, due now, of a run's endpoint. Follow it with show_run. A
        DAG dependant's run: its node re-runs alone in its DAG run, with its upstreams'
        answers there (`{"rerun": "job/endpoint"}`)."""
        await check_target(reading, reach, run=run)
        retried = await run_control.retry_run(
            ctx.store.unit_of_work, ctx.waker, run, actor, ctx.clock.now()
        )
        return retry_view(retried)

    @box.tool(read_only=False)
    async def clear_dag(
        run: AnId,
        node: Annotated[str, Field(description="The endpoint's name in the job.")],
    ) -> dict[str, Any]:
        """Re-run `node` and what depends on it in the DAG run this run began (or belongs
        to), with the answers its upstreams gave in it; the upstreams are not called again."""
        await check_target(reading, reach, run=run)
        cleared = await run_control.clear_dag(
            ctx.store.unit_of_work, ctx.waker, run, node, actor=actor, now=ctx.clock.now()
        )
        return {"cleared": cleared.ref}

    @box.tool(read_only=False)
    async def apply_document(
        document: Annotated[
            str, Field(description="The YAML or JSON of a jobs file (`cronpilot apply -f`).")
        ],
        dry_run: Annotated[
            bool, Field(description="Say what would change, field by field; write nothing.")
        ] = False,
    ) -> dict[str, Any]:
        """Create or update the jobs and endpoints a declaration document declares: validated
        whole first, then applied all or nothing. `${VARIABLES}` are not expanded. Endpoints
        of a declared job missing from the document are left alone (listed as `absent`). A
        token limited to jobs is refused: a document may declare any job."""
        who.check_every_job()
        if len(document.encode()) > MAX_FILE_BYTES:
            raise InvalidConfig(DOCUMENT_SOURCE, f"larger than {MAX_FILE_BYTES:,} bytes")
        declared = parse_declarations(
            document, DOCUMENT_SOURCE, ctx.allowed_networks, env={}, floor_seconds=ctx.floor_seconds
        )
        if dry_run:
            preview = await declarations.preview_declarations(reading, declared, DOCUMENT_SOURCE)
            return changes_view(preview.changes)
        report = await declarations.apply_declarations(
            ctx.store.unit_of_work,
            ctx.waker,
            declared,
            DOCUMENT_SOURCE,
            actor=actor,
            now=ctx.clock.now(),
        )
        return report_view(report)
