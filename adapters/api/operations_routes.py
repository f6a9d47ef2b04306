"""For operators: the audit log, the workers at work, and when a crontab fires; each the data
of its CLI command (`audit list`, `workers list`, `cron`), read by the same query."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.exceptions import RequestValidationError

from cronpilot.adapters.api.access import EveryJobAdmin, Reader
from cronpilot.adapters.api.windows import Within
from cronpilot.adapters.views.audit import entry_view
from cronpilot.adapters.views.schedules import MAX_COUNT, fires_view
from cronpilot.adapters.views.workers import worker_view
from cronpilot.adapters.web.context import Context
from cronpilot.adapters.web.paging import CursorToken, Limit, after, page_view
from cronpilot.domain.access.audit import AuditAction
from cronpilot.domain.errors import InvalidSchedule
from cronpilot.domain.schedule.schedule import next_cron_fires, zone
from cronpilot.usecases.queries.audit import page_audit
from cronpilot.usecases.workers import active_workers

router = APIRouter(tags=["operations"])


@router.get("/audit")
async def get_audit(
    *,
    ctx: Context,
    _: EveryJobAdmin,
    actor: Annotated[
        str | None, Query(description="Only this actor's: `token:ci`, `cli:ann@web-1`.")
    ] = None,
    action: Annotated[AuditAction | None, Query(description="Only this kind of change.")] = None,
    limit: Limit = 50,
    cursor: CursorToken = None,
    within: Within,
) -> dict[str, Any]:
    """The audit log newest first, a page at a time: every write, who made it, and on what
    (`cronpilot audit list`). Admin tokens only: it names every token that wrote."""
    page = await page_audit(
        ctx.store.reading,
        actor=actor,
        action=action,
        limit=limit,
        after=after(cursor),
        within=within,
    )
    return page_view(page, entry_view)


@router.get("/workers")
async def get_workers(ctx: Context, _: Reader) -> dict[str, Any]:
    """Scheduler workers heard from within CRONPILOT_WORKER_STALE_SECONDS, most recently seen
    first, with the runs each started in the last minute (`cronpilot workers list`)."""
    found = await active_workers(ctx.store.reading, ctx.clock.now(), ctx.worker_stale_seconds)
    return {"items": [worker_view(activity) for activity in found]}


@router.get("/cron/preview")
async def cron_preview(
    *,
    ctx: Context,
    _: Reader,
    expr: Annotated[
        str, Query(description='5 fields (minute first), 6 (second first) or a macro: "@daily".')
    ],
    tz: Annotated[str, Query(description="The zone whose wall clock the crontab reads.")] = "UTC",
    count: Annotated[int, Query(ge=1, le=MAX_COUNT, description="How many fire times.")] = 5,
    after_time: Annotated[
        datetime | None,
        Query(alias="after", description="Start here instead of now (in `tz` without an offset)."),
    ] = None,
) -> dict[str, Any]:
    """The next fire times of a crontab, in UTC and in its zone (`cronpilot cron`). An
    invalid expression or zone is a 422 naming the parameter."""
    try:
        timezone = zone(tz)
    except InvalidSchedule as error:
        raise _invalid("tz", error) from None
    start = ctx.clock.now() if after_time is None else after_time
    if start.tzinfo is None:
        start = start.replace(tzinfo=timezone)
    try:
        fires = next_cron_fires(expr, tz, start, count)
    except InvalidSchedule as error:
        raise _invalid("expr", error) from None
    return {
        "cron": expr,
        "timezone": tz,
        "after": start.isoformat(),
        "fires": fires_view(fires, tz),
    }


def _invalid(parameter: str, error: InvalidSchedule) -> RequestValidationError:
    return RequestValidationError(
        [{"loc": ("query", parameter), "msg": str(error), "type": "value_error"}]
    )
