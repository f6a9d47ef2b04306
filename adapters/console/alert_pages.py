"""The console's alerts: the outbox (what was sent where, what is held and why), a notification
sent again, and a test alert for an endpoint's webhooks and targets."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query, Request, Response

from cronpilot.adapters.console.pages import (
    PAGE,
    PREFIX,
    SignedIn,
    Writing,
    back,
    choice,
    console_router,
    render,
)
from cronpilot.adapters.views.notifications import hold_reason, target_kind
from cronpilot.adapters.web.context import Context
from cronpilot.adapters.web.paging import after
from cronpilot.domain.access.secrets import mask_url, mask_urls
from cronpilot.domain.alerts.alerts import NotificationStatus
from cronpilot.domain.paging import encode_cursor
from cronpilot.usecases.alert_delivery import redeliver, send_test
from cronpilot.usecases.queries.catalog import endpoint_refs
from cronpilot.usecases.queries.notifications import list_notifications
from cronpilot.usecases.queries.reach import check_target

router = console_router()


@router.get("/notifications")
async def notifications(
    *,
    request: Request,
    ctx: Context,
    who: SignedIn,
    status: Annotated[str | None, Query()] = None,
    endpoint: Annotated[str | None, Query()] = None,
    cursor: Annotated[str | None, Query()] = None,
) -> Response:
    """Newest first, each with its kind of target and, when held, the upstream that held it."""
    wanted = choice(NotificationStatus, "status", status)
    reading, reach = ctx.store.reading, who.reach
    page = await list_notifications(
        reading,
        endpoint=endpoint or None,
        status=wanted,
        limit=PAGE,
        after=after(cursor or None),
        reach=reach,
    )
    return render(
        request,
        "notifications.html",
        who,
        ctx.clock.now(),
        notifications=page.items,
        refs=await endpoint_refs(reading, reach=reach),
        kind=target_kind,
        where=mask_url,
        where_error=lambda n: mask_urls(n.last_error) if n.last_error else "",
        reason=hold_reason,
        statuses=list(NotificationStatus),
        status=status or "",
        endpoint=endpoint or "",
        older=None if page.next_cursor is None else encode_cursor(page.next_cursor),
    )


@router.post("/notifications/{notification_id}/redeliver")
async def redeliver_one(notification_id: str, ctx: Context, act: Writing) -> Response:
    await check_target(ctx.store.reading, act.reach, notification=notification_id)
    await redeliver(ctx.store.unit_of_work, notification_id, act.actor, ctx.clock.now())
    return back(f"{PREFIX}/notifications", "redelivered")


@router.post("/endpoints/{job}/{name}/notify-test")
async def notify_test(job: str, name: str, ctx: Context, act: Writing) -> Response:
    ref = f"{job}/{name}"
    await check_target(ctx.store.reading, act.reach, endpoint=ref)
    await send_test(ctx.store.unit_of_work, ref, act.actor, ctx.clock.now())
    return back(f"{PREFIX}/notifications", "test-sent")
