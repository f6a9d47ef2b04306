"""Notification targets through the API: a target the guard refuses is a 400 problem in one
line that writes nothing and never quotes the secret URL; an endpoint shows its targets with
their secrets masked."""

from __future__ import annotations

from tests.api.conftest import Api
from tests.api.test_api import _is_problem

JOBS = """
jobs:
  - name: shop
    notify:
      targets:
        - {kind: slack, url: "https://hooks.slack.com/services/T0/B0/sl4ck", events: [failing]}
        - {kind: pagerduty, routing_key: R0UTE}
        - {kind: email, host: smtp.example.com, from: cron@example.com, to: [ops@example.com],
           starttls: true, username: cron, password: p4ss}
    endpoints:
      - name: orders
        url: https://example.com/orders
        interval: 60s
"""


async def test_targets_are_refused_by_the_guard_and_shown_masked(api: Api) -> None:
    async with api.client() as client:
        refused = _is_problem(
            await client.post("/apply", content=JOBS.replace("hooks.slack.com", "10.0.0.5")), 400
        )
        jobs_before = (await client.get("/jobs")).json()["items"]
        applied = await client.post("/apply", content=JOBS)
        shown = (await client.get("/endpoints/shop/orders")).json()

    detail = str(refused["detail"])
    assert (
        "field 'notify.targets[0].url': refused by the address guard: 10.0.0.5 is private" in detail
    )
    assert "\n" not in detail
    assert "sl4ck" not in detail
    assert jobs_before == []
    assert applied.status_code == 200, applied.text
    slack, pagerduty, email = shown["notify_targets"]
    assert slack == {"kind": "slack", "events": ["failing"], "url": "https://hooks.slack.com/****"}
    assert pagerduty["routing_key"] == "****"
    assert email["smtp"]["password"] == "****"
    for secret in ("sl4ck", "R0UTE", "p4ss"):
        assert secret not in str(shown)
