"""`cronpilot notify test REF`: a test alert to every webhook and target of an endpoint."""

from __future__ import annotations

from typing import Annotated

import typer

from cronpilot.adapters.bootstrap import build_clock
from cronpilot.adapters.cli import completion
from cronpilot.adapters.cli.identity import actor
from cronpilot.adapters.cli.output import OutputOption, print_data
from cronpilot.adapters.cli.runtime import admin_settings, with_store
from cronpilot.adapters.views.notifications import notification_view, target_kind
from cronpilot.domain.access.secrets import mask_url
from cronpilot.domain.alerts.alerts import Notification
from cronpilot.domain.ports import Store
from cronpilot.usecases.alert_delivery import send_test


def test(
    ref: Annotated[
        str,
        typer.Argument(
            help="The endpoint (`job/endpoint` or its id) whose webhooks and targets to test.",
            autocompletion=completion.graph_nodes,
        ),
    ],
    output: OutputOption = None,
) -> None:
    """Send a `test` alert to each webhook and target of an endpoint, whatever events each
    receives; the workers' notifiers deliver it (`notifications list` shows how it went)."""

    async def act(store: Store) -> list[Notification]:
        return await send_test(store.unit_of_work, ref, actor(), build_clock().now())

    sent = with_store(admin_settings(), act)
    if output:
        print_data(output, [notification_view(n, ref) for n in sent])
        return
    for n in sent:
        typer.echo(f"test alert {n.id} queued for {target_kind(n)} {mask_url(n.url)}")
