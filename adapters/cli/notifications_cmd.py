"""`cronpilot notifications …`: the alerts sent (or being sent) to webhooks."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import typer

from cronpilot.adapters.bootstrap import build_clock
from cronpilot.adapters.cli.identity import actor
from cronpilot.adapters.cli.listing import (
    EndpointFilter,
    JobFilter,
    LimitOption,
    Listing,
    Referenced,
    with_endpoint_refs,
)
from cronpilot.adapters.cli.output import OutputOption, print_data
from cronpilot.adapters.cli.runtime import admin_settings, with_store
from cronpilot.adapters.cli.time_options import SinceOption, UntilOption, window
from cronpilot.adapters.views.formats import clock_time
from cronpilot.adapters.views.notifications import (
    event_label,
    hold_reason,
    notification_view,
    target_kind,
)
from cronpilot.domain.access.secrets import mask_url, mask_urls
from cronpilot.domain.alerts.alerts import Notification, NotificationStatus
from cronpilot.domain.ports import Store
from cronpilot.usecases.alert_delivery import redeliver as redeliver_notification
from cronpilot.usecases.queries import notifications
from cronpilot.usecases.queries.catalog import ref_of


def list_notifications(
    job: JobFilter = None,
    endpoint: EndpointFilter = None,
    status: Annotated[
        NotificationStatus | None, typer.Option(help="Only notifications in this state.")
    ] = None,
    limit: LimitOption = 50,
    *,
    since: SinceOption = None,
    until: UntilOption = None,
    output: OutputOption = None,
) -> None:
    """Alerts for webhooks, newest first: the event, where it goes, and how delivery went."""
    within = window(since, until)
    found = with_endpoint_refs(
        lambda reading: notifications.list_notifications(
            reading, job=job, endpoint=endpoint, status=status, limit=limit, within=within
        )
    )
    _LISTING.show(found, output)


def _row(entry: Referenced[Notification], now: datetime) -> list[str]:
    n, ref = entry
    return [
        clock_time(n.created_at, now),
        event_label(n),
        ref,
        # The kind first: a Slack and a Teams URL, masked, can look alike.
        f"{target_kind(n)}: {mask_url(n.url)}",
        n.status.value,
        str(n.attempts),
        hold_reason(n) or (mask_urls(n.last_error) if n.last_error else ""),
    ]


_LISTING = Listing[Referenced[Notification]](
    empty="no notifications",
    columns=(
        "Created",
        "Event",
        "Endpoint",
        "URL",
        "Status",
        "Attempts",
        "Last error",
    ),
    row=_row,
    view=lambda entry: notification_view(*entry),
    wrap=("Last error",),
)


def redeliver(
    notification_id: Annotated[str, typer.Argument(help="The notification's id.")],
    output: OutputOption = None,
) -> None:
    """Send a notification again (a failed, held or delivered one), with a fresh set of
    attempts; the workers' notifiers deliver it."""

    async def act(store: Store) -> tuple[Notification, str]:
        again = await redeliver_notification(
            store.unit_of_work, notification_id, actor(), build_clock().now()
        )
        return again, await ref_of(store.reading, again)

    again, ref = with_store(admin_settings(), act)
    if output:
        print_data(output, notification_view(again, ref))
        return
    typer.echo(
        f"notification {again.id} ({again.event.value}) queued again for {mask_url(again.url)}"
    )
