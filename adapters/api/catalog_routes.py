"""Jobs and endpoints: read them, apply a declaration document, delete, pause and resume."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Request, Response
from pydantic import Field

from cronpilot.adapters.api.access import EveryJobWriter, Reader, Writer
from cronpilot.adapters.api.versions import IfMatch, etag, expected_version, tag_response
from cronpilot.adapters.jobs_file import MAX_FILE_BYTES, parse_declarations
from cronpilot.adapters.views.catalog import endpoint_view, job_pause_view, job_view, report_view
from cronpilot.adapters.views.declarations import changes_view
from cronpilot.adapters.views.formats import iso
from cronpilot.adapters.views.limits import limit_status_view, limit_view
from cronpilot.adapters.views.quiet import quiet_view
from cronpilot.adapters.web.context import Context
from cronpilot.adapters.web.paging import CursorToken, Limit, after_name, named_page_view
from cronpilot.adapters.web.strict import StrictBody
from cronpilot.domain.errors import InvalidConfig
from cronpilot.domain.model import Pause
from cronpilot.usecases import schedule
from cronpilot.usecases.declarations import apply_declarations, preview_declarations
from cronpilot.usecases.deletion import delete
from cronpilot.usecases.queries.catalog import (
    list_limits,
    page_endpoints,
    page_jobs,
    show_endpoint,
    show_job,
)
from cronpilot.usecases.queries.reach import check_target
from cronpilot.usecases.schedule import pause_endpoint, resume_endpoint

router = APIRouter(tags=["jobs and endpoints"])

DOCUMENT_SOURCE = "request body"
"""How messages name an applied document (`cronpilot apply` names its file)."""


@router.get("/jobs")
async def get_jobs(
    ctx: Context, who: Reader, limit: Limit = 50, cursor: CursorToken = None
) -> dict[str, Any]:
    """Jobs by name, with how many endpoints each holds, a page at a time: pass
    `next_cursor` back as `cursor` until it is null."""
    page = await page_jobs(ctx.store.reading, limit, after_name(cursor, 1), reach=who.reach)
    return named_page_view(page, lambda s: job_view(s.job, s.endpoint_count))


@router.get("/jobs/{job}")
async def get_job(job: str, ctx: Context, who: Reader) -> dict[str, Any]:
    found, endpoints = await show_job(ctx.store.reading, job, reach=who.reach)
    return {**job_view(found, len(endpoints)), "endpoint_refs": [e.ref for e in endpoints]}


@router.delete("/jobs/{job}")
async def delete_job(job: str, ctx: Context, who: Writer) -> dict[str, Any]:
    """Delete the job, its endpoints and everything recorded of them (runs, proposals,
    sessions, schemas, notifications, graph edges)."""
    await check_target(ctx.store.reading, who.reach, job=job)
    deleted = await delete(ctx.store.unit_of_work, job, who.actor, ctx.clock.now(), job_only=True)
    return {"job": deleted.job, "endpoints": deleted.endpoints}


@router.get("/endpoints")
async def get_endpoints(
    ctx: Context,
    who: Reader,
    job: str | None = None,
    limit: Limit = 50,
    cursor: CursorToken = None,
) -> dict[str, Any]:
    """Endpoints by job and name, with their last run, a page at a time (as `/jobs`)."""
    page = await page_endpoints(
        ctx.store.reading, job, limit, after_name(cursor, 2), reach=who.reach
    )
    return named_page_view(page, lambda s: endpoint_view(s.endpoint, s.last_run))


@router.get("/endpoints/{job}/{name}")
async def get_endpoint(
    job: str, name: str, response: Response, ctx: Context, who: Reader
) -> dict[str, Any]:
    """The endpoint with its `ETag`: send it back as `If-Match` on a write."""
    state = await show_endpoint(
        ctx.store.reading, f"{job}/{name}", ctx.clock.now(), reach=who.reach
    )
    tag_response(response, state.endpoint)
    looked = {"last_analysed_at": iso(state.last_analysed_at), "changes": state.changes}
    quiet = quiet_view(state.endpoint, ctx.clock.now())
    shown = endpoint_view(state.endpoint, state.last_run) | looked | quiet
    return shown | limit_view(state.limit)


@router.get("/limits")
async def get_limits(ctx: Context, who: Reader, job: str | None = None) -> list[dict[str, Any]]:
    """Limits per target by key, with their calls in flight and the slots the last claim held
    back; with `job`, or for a token limited to jobs, only the keys their endpoints name."""
    statuses = await list_limits(ctx.store.reading, job, reach=who.reach)
    return [limit_status_view(status) for status in statuses]


@router.delete("/endpoints/{job}/{name}")
async def delete_endpoint(
    job: str, name: str, ctx: Context, who: Writer, if_match: IfMatch = None
) -> dict[str, Any]:
    """Delete the endpoint and everything recorded of it; refused (409) while others of its
    job depend on it."""
    await check_target(ctx.store.reading, who.reach, endpoint=f"{job}/{name}")
    deleted = await delete(
        ctx.store.unit_of_work,
        f"{job}/{name}",
        who.actor,
        ctx.clock.now(),
        if_version=expected_version(if_match),
    )
    return {"job": deleted.job, "endpoints": deleted.endpoints}


class PauseRequest(StrictBody):
    reason: str = Field(min_length=1, max_length=500)
    until: datetime | None = Field(
        default=None, description="RFC 3339 with an offset; absent: until resumed."
    )


@router.post("/endpoints/{job}/{name}/pause")
async def pause(
    *,
    job: str,
    name: str,
    request: PauseRequest,
    response: Response,
    ctx: Context,
    who: Writer,
    if_match: IfMatch = None,
) -> dict[str, Any]:
    await check_target(ctx.store.reading, who.reach, endpoint=f"{job}/{name}")
    paused = await pause_endpoint(
        ctx.store.unit_of_work,
        f"{job}/{name}",
        Pause(request.reason, request.until),
        who.actor,
        ctx.clock.now(),
        if_version=expected_version(if_match),
    )
    tag_response(response, paused)
    return endpoint_view(paused, None)


@router.post("/endpoints/{job}/{name}/resume")
async def resume(
    *, job: str, name: str, response: Response, ctx: Context, who: Writer, if_match: IfMatch = None
) -> dict[str, Any]:
    await check_target(ctx.store.reading, who.reach, endpoint=f"{job}/{name}")
    resumed = await resume_endpoint(
        ctx.store.unit_of_work,
        ctx.waker,
        f"{job}/{name}",
        who.actor,
        ctx.clock.now(),
        if_version=expected_version(if_match),
    )
    tag_response(response, resumed)
    return endpoint_view(resumed, None)


@router.post("/jobs/{job}/pause")
async def pause_job(job: str, request: PauseRequest, ctx: Context, who: Writer) -> dict[str, Any]:
    """Stop every endpoint of the job (and the DAG runs inside it) until `until`, or until
    resumed; their own pauses stay underneath (each endpoint's `paused`, beside `job_paused`)."""
    await check_target(ctx.store.reading, who.reach, job=job)
    paused = await schedule.pause_job(
        ctx.store.unit_of_work,
        job,
        Pause(request.reason, request.until),
        who.actor,
        ctx.clock.now(),
    )
    return job_pause_view(paused)


@router.post("/jobs/{job}/resume")
async def resume_job(job: str, ctx: Context, who: Writer) -> dict[str, Any]:
    """Lift the job's pause: its endpoints run again as their own pauses and plans say."""
    await check_target(ctx.store.reading, who.reach, job=job)
    resumed = await schedule.resume_job(
        ctx.store.unit_of_work, ctx.waker, job, who.actor, ctx.clock.now()
    )
    return job_pause_view(resumed)


@router.post(
    "/apply",
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "application/yaml": {"schema": {"type": "string"}},
                "application/json": {"schema": {"type": "object"}},
            },
        }
    },
)
async def apply(
    *,
    request: Request,
    response: Response,
    ctx: Context,
    who: EveryJobWriter,
    dry_run: Annotated[
        bool,
        Query(description="Say what would change, field by field, and write nothing."),
    ] = False,
    if_match: Annotated[
        str | None,
        Header(
            alias="If-Match",
            description="The `ETag` of a dry run of this document: applied only if what it "
            "declares is stored as it was then, else refused (412).",
        ),
    ] = None,
) -> dict[str, Any]:
    """Apply a declaration document (the YAML or JSON of `cronpilot apply -f`): validated
    whole first, then applied all or nothing. `${VARIABLES}` are not expanded from the
    server's environment. A dry run answers the changes with an `ETag`."""
    # Read raw: YAML and JSON alike go to the jobs-file parser (JSON is YAML), as with `-f`.
    document = await _document(request)
    try:
        text = document.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidConfig(DOCUMENT_SOURCE, f"not UTF-8: {exc.reason}") from exc
    declarations = parse_declarations(
        text, DOCUMENT_SOURCE, ctx.allowed_networks, env={}, floor_seconds=ctx.floor_seconds
    )
    if dry_run:
        preview = await preview_declarations(ctx.store.reading, declarations, DOCUMENT_SOURCE)
        response.headers["ETag"] = etag(preview.version)
        return changes_view(preview.changes)
    report = await apply_declarations(
        ctx.store.unit_of_work,
        ctx.waker,
        declarations,
        DOCUMENT_SOURCE,
        actor=who.actor,
        now=ctx.clock.now(),
        if_version=expected_version(if_match),
    )
    return report_view(report)


async def _document(request: Request) -> bytes:
    """The body, refused once past the jobs file's size limit: never read an endless one."""
    document = bytearray()
    async for chunk in request.stream():
        document += chunk
        if len(document) > MAX_FILE_BYTES:
            raise InvalidConfig(DOCUMENT_SOURCE, f"larger than {MAX_FILE_BYTES:,} bytes")
    return bytes(document)
