"""What was learnt of the responses (output schema, drift) and the alerts outbox."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from cronpilot.adapters.api.access import Reader, Writer
from cronpilot.adapters.api.windows import Within
from cronpilot.adapters.views.notifications import notification_view
from cronpilot.adapters.views.outputs import output_view
from cronpilot.adapters.web.context import Context
from cronpilot.adapters.web.paging import CursorToken, Limit, after, endpoint_page_view
from cronpilot.domain.alerts.alerts import NotificationStatus
from cronpilot.usecases.alert_delivery import redeliver, send_test
from cronpilot.usecases.queries.catalog import ref_of
from cronpilot.usecases.queries.notifications import list_notifications
from cronpilot.usecases.queries.outputs import show_output
from cronpilot.usecases.queries.reach import check_target

router = APIRouter(tags=["outputs and alerts"])


@router.get("/endpoints/{job}/{name}/schema")
async def get_schema(
    job: str,
    name: str,
    ctx: Context,
    who: Reader,
    drift: Annotated[int, Query(ge=0, le=1000, description="Drift events, newest first.")] = 10,
) -> dict[str, Any]:
    """The endpoint's learnt output schema (JSON Schema with counts) and its drift events."""
    learnt = await show_output(ctx.store.reading, f"{job}/{name}", drift, reach=who.reach)
    return output_view(learnt)


@router.get("/notifications")
async def get_notifications(
    *,
    ctx: Context,
    who: Reader,
    job: str | None = None,
    endpoint: str | None = None,
    status: NotificationStatus | None = None,
    limit: Limit = 50,
    cursor: CursorToken = None,
    within: Within,
) -> dict[str, Any]:
    page = await list_notifications(
        ctx.store.reading,
        job=job,
        endpoint=endpoint,
        status=status,
        limit=limit,
        after=after(cursor),
        within=within,
        reach=who.reach,
    )
    return await endpoint_page_view(ctx.store.reading, page, notification_view)


@router.post("/notifications/{notification_id}/redeliver")
async def redeliver_notification(notification_id: str, ctx: Context, who: Writer) -> dict[str, Any]:
    """Send a notification again (failed, held or delivered) with a fresh set of attempts."""
    await check_target(ctx.store.reading, who.reach, notification=notification_id)
    again = await redeliver(ctx.store.unit_of_work, notification_id, who.actor, ctx.clock.now())
    return notification_view(again, await ref_of(ctx.store.reading, again))


@router.post("/endpoints/{job}/{name}/notify-test")
async def notify_test(job: str, name: str, ctx: Context, who: Writer) -> dict[str, Any]:
    """Send a `test` alert to each webhook and target of the endpoint; the workers deliver it."""
    ref = f"{job}/{name}"
    await check_target(ctx.store.reading, who.reach, endpoint=ref)
    sent = await send_test(ctx.store.unit_of_work, ref, who.actor, ctx.clock.now())
    return {"items": [notification_view(n, ref) for n in sent]}
