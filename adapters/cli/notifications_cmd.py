"""`cronpilot notifications …`: the alerts sent (or being sent) to webhooks."""

from __future__ import annotations

from typing import Annotated

import typer

from cronpilot.adapters.bootstrap import build_clock
from cronpilot.adapters.cli.output import (
    OutputOption,
    add_row,
    clock_time,
    new_table,
    note,
    print_data,
    print_table,
)
from cronpilot.adapters.cli.runtime import admin_settings, with_store
from cronpilot.adapters.cli.time_options import SinceOption, UntilOption, window
from cronpilot.adapters.cli.views import event_label, notification_view
from cronpilot.domain.alerts import Notification, NotificationStatus
from cronpilot.domain.ports import Store
from cronpilot.domain.secrets import mask_url, mask_urls
from cronpilot.usecases.queries import catalog, notifications


def list_notifications(
    job: Annotated[str | None, typer.Option(help="Only this job's endpoints.")] = None,
    endpoint: Annotated[
        str | None, typer.Option(help="Only this endpoint's (`job/endpoint` or an id).")
    ] = None,
    status: Annotated[
        NotificationStatus | None, typer.Option(help="Only notifications in this state.")
    ] = None,
    limit: Annotated[int, typer.Option(min=1, max=1000, help="How many, newest first.")] = 50,
    *,
    since: SinceOption = None,
    until: UntilOption = None,
    output: OutputOption = None,
) -> None:
    """Alerts for webhooks, newest first: the event, where it goes, and how delivery went."""
    within = window(since, until)

    async def act(store: Store) -> tuple[list[Notification], dict[str, str]]:
        page = await notifications.list_notifications(
            store.reading, job=job, endpoint=endpoint, status=status, limit=limit, within=within
        )
        return page.items, await catalog.endpoint_refs(store.reading)

    found, refs = with_store(admin_settings(), act)
    if output:
        print_data(output, [notification_view(n, refs.get(n.endpoint_id, "?")) for n in found])
        return
    if not found:
        note("no notifications")
        return
    now = build_clock().now()
    table = new_table(
        "Created",
        "Event",
        "Endpoint",
        "URL",
        "Status",
        "Attempts",
        "Last error",
        wrap=("Last error",),
    )
    for n in found:
        add_row(
            table,
            clock_time(n.created_at, now),
            event_label(n),
            refs.get(n.endpoint_id, "?"),
            mask_url(n.url),
            n.status.value,
            str(n.attempts),
            mask_urls(n.last_error) if n.last_error else "",
        )
    print_table(table)
