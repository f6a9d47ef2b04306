"""Notification targets through the API: a target the guard refuses is a 400 problem in one
line that writes nothing and never quotes the secret URL; an endpoint shows its targets with
their secrets masked."""

from __future__ import annotations

from tests.integration.api.conftest import Api
from tests.integration.api.test_api import _is_problem

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


async def test_a_test_alert_and_a_redelivery_through_the_api(api: Api) -> None:
    async with api.client() as client:
        assert (await client.post("/apply", content=JOBS)).status_code == 200
        tested = await client.post("/endpoints/shop/orders/notify-test")
        first = tested.json()["items"][0]
        again = await client.post(f"/notifications/{first['id']}/redeliver")
        unknown = _is_problem(await client.post("/notifications/nope/redeliver"), 404)
        listed = (await client.get("/notifications", params={"endpoint": "shop/orders"})).json()

    assert tested.status_code == 200, tested.text
    assert sorted(n["kind"] for n in tested.json()["items"]) == ["email", "pagerduty", "slack"]
    assert {n["event"] for n in tested.json()["items"]} == {"test"}
    assert again.status_code == 200, again.text
    assert (again.json()["id"], again.json()["status"]) == (first["id"], "pending")
    assert "notification" in str(unknown["detail"])
    assert len(listed["items"]) == 3
    for secret in ("sl4ck", "R0UTE", "p4ss"):
        assert secret not in tested.text + again.text
