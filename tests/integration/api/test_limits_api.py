"""Limits per target through the API: `GET /limits` lists every key; a token limited to a job
sees only the keys that job's endpoints name."""

from __future__ import annotations

from cronpilot.domain.access.access import Scope
from tests.integration.api.conftest import Api, bearer

JOBS = """
limits:
  partner-api: {concurrency: 2, rate: 5/s}
  ledger-api: {rate: 100/m, burst: 10}
jobs:
  - name: shop
    limit: partner-api
    endpoints:
      - name: stock
        url: https://example.com/stock
        interval: 60s
  - name: ledger
    limit: ledger-api
    endpoints:
      - name: close
        url: https://example.net/close
        interval: 60s
"""


async def test_limits_are_listed_by_key_with_calls_in_flight_and_hold(api: Api) -> None:
    async with api.client(Scope.WRITE) as writer:
        assert (await writer.post("/apply", content=JOBS)).status_code == 200
    async with api.client(Scope.READ) as reader:
        listed = await reader.get("/limits")
        of_shop = await reader.get("/limits", params={"job": "shop"})

    assert listed.status_code == 200, listed.text
    assert listed.json() == [
        {
            "key": "ledger-api",
            "concurrency": None,
            "rate": "100/m",
            "burst": 10,
            "in_flight": 0,
            "held": 0,
            "hold_reason": None,
            "held_at": None,
            "open_at": None,
        },
        {
            "key": "partner-api",
            "concurrency": 2,
            "rate": "5/s",
            "burst": 1,
            "in_flight": 0,
            "held": 0,
            "hold_reason": None,
            "held_at": None,
            "open_at": None,
        },
    ]
    assert [limit["key"] for limit in of_shop.json()] == ["partner-api"]


async def test_a_job_limited_token_sees_only_the_limits_its_jobs_name(api: Api) -> None:
    async with api.client() as admin:
        assert (await admin.post("/apply", content=JOBS)).status_code == 200
        made = await admin.post(
            "/tokens", json={"name": "shop-bot", "scope": "read", "jobs": ["shop"]}
        )
    async with api.client(None) as client:
        client.headers.update(bearer(made.json()["secret"]))
        own = await client.get("/limits", params={"job": "shop"})
        other = await client.get("/limits", params={"job": "ledger"})
        unknown = await client.get("/limits", params={"job": "nosuchjob"})
        every = await client.get("/limits")

    assert [limit["key"] for limit in own.json()] == ["partner-api"]
    # Another job answers as one that does not exist; no job means the token's own.
    assert (other.status_code, other.json()["detail"]) == (
        404,
        unknown.json()["detail"].replace("nosuchjob", "ledger"),
    )
    assert [limit["key"] for limit in every.json()] == ["partner-api"]
