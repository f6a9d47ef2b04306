"""The console's alerts page over HTTP: each alert with its kind of target and, when held, the
upstream that held it; a test alert sent from an endpoint's page; a failed alert sent again."""

from __future__ import annotations

import html
from dataclasses import replace

from cronpilot.adapters.console.pages import PAGE
from cronpilot.adapters.jobs_file import parse_declarations
from cronpilot.domain.access.access import Scope
from cronpilot.domain.alerts.alerts import NotificationStatus
from cronpilot.usecases.access import list_audit
from cronpilot.usecases.declarations import apply_declarations
from tests.integration.api.test_console import Console, console

__all__ = ["console"]

JOBS = """\
jobs:
  - name: alerts
    endpoints:
      - name: probe
        url: https://93.184.216.34/probe
        interval: 1m
        notify: ["https://hooks.example.com/ops?token=hunter2"]
"""


async def test_a_test_alert_a_redelivery_and_a_held_alert_on_the_alerts_page(
    console: Console,
) -> None:
    store = console.store
    declared = parse_declarations(JOBS, "jobs.yaml", [], {})
    await apply_declarations(
        store.unit_of_work, None, declared, "jobs.yaml", actor="cli:t@h", now=console.clock.now()
    )
    async with console.signed_in(Scope.WRITE) as (client, csrf):
        endpoint_page = await client.get("/console/endpoints/alerts/probe")
        tested = await client.post(
            "/console/endpoints/alerts/probe/notify-test", data={"csrf": csrf}
        )
        [sent] = await store.notifications.claim_due(console.clock.now(), "n1", 60, 10)
        assert await store.notifications.mark_failed(
            sent.id, "n1", "HTTP 500", None, console.clock.now()
        )
        held = replace(sent, id="held1", status=NotificationStatus.HELD, held_by="alerts/up")
        await store.notifications.add([held])
        listed = await client.get("/console/notifications")
        again = await client.post(
            f"/console/notifications/{sent.id}/redeliver", data={"csrf": csrf}
        )
        pending = await client.get("/console/notifications", params={"status": "pending"})

    assert ">Send test alert</button>" in endpoint_page.text
    assert tested.headers["location"] == "/console/notifications?note=test-sent"
    assert "blocked by alerts/up" in listed.text
    assert ">Send again</button>" in listed.text
    assert "<td>webhook</td>" in listed.text
    assert "hunter2" not in listed.text
    assert again.headers["location"] == "/console/notifications?note=redelivered"
    assert "<td>test</td>" in pending.text and "blocked by" not in pending.text
    audit = await list_audit(store.reading, actor="token:write-bot")
    assert sorted(e.action for e in audit) == ["notify_test", "redeliver"]


async def test_the_older_alerts_link_sends_no_empty_filter(console: Console) -> None:
    store = console.store
    declared = parse_declarations(JOBS, "jobs.yaml", [], {})
    await apply_declarations(
        store.unit_of_work, None, declared, "jobs.yaml", actor="cli:t@h", now=console.clock.now()
    )
    async with console.signed_in(Scope.WRITE) as (client, csrf):
        for _ in range(PAGE + 1):
            await client.post("/console/endpoints/alerts/probe/notify-test", data={"csrf": csrf})
        first = await client.get("/console/notifications")
        link = first.text.split('<a href="?', 1)[1].split('">Older alerts', 1)[0]
        older = await client.get(f"/console/notifications?{html.unescape(link)}")

    assert link.startswith("cursor=")
    assert older.status_code == 200, older.text
    assert older.text.count("<td>test</td>") == 1
