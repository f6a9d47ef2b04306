"""Token hygiene over HTTP: the admin routes `/tokens` (secrets shown once, audited with the
actor), an expired token's 401 that says so, a rotated secret's grace, and a job-limited
token that sees its jobs and nothing of another (404, as for what does not exist)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx

from cronpilot.domain.access.access import Scope
from tests.integration.api.conftest import JOBS, Api, bearer

LEDGER = """
jobs:
  - name: ledger
    endpoints:
      - name: close
        url: https://example.com/close
        interval: 60s
"""


def _problem(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body: dict[str, Any] = response.json()
    return body


def _as(api: Api, secret: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=api.url, headers=bearer(secret), timeout=10)


async def _two_jobs(admin: httpx.AsyncClient) -> None:
    for document in (JOBS, LEDGER):
        assert (await admin.post("/apply", content=document)).status_code == 200


async def test_admins_create_list_rotate_and_revoke_tokens_and_each_is_audited(api: Api) -> None:
    expiry = api.clock.now() + timedelta(days=90)
    async with api.client() as admin:
        await _two_jobs(admin)
        created = await admin.post(
            "/tokens",
            json={
                "name": "etl",
                "scope": "write",
                "jobs": ["shop"],
                "expires_at": expiry.isoformat(),
            },
        )
        listed = await admin.get("/tokens")
        rotated = await admin.post("/tokens/etl/rotate", json={"grace_seconds": 0})
        revoked = await admin.delete("/tokens/etl")
        live = await admin.get("/tokens")
        everyone = await admin.get("/tokens", params={"all": "true"})
        audit = await api.store.access.list_audit(actor="token:admin-bot")

    assert created.status_code == 201, created.text
    made = created.json()
    assert (made["name"], made["scope"], made["jobs"]) == ("etl", "write", ["shop"])
    assert made["expires_at"] == expiry.isoformat()
    [shown] = [t for t in listed.json() if t["name"] == "etl"]
    assert "secret" not in shown and made["secret"] not in listed.text
    assert "hash" not in str(shown)
    assert rotated.status_code == 200
    assert rotated.json()["secret"] != made["secret"]
    assert revoked.json()["revoked_by"] == "token:admin-bot"
    assert "etl" not in [t["name"] for t in live.json()]
    assert [t["revoked_by"] for t in everyone.json() if t["name"] == "etl"] == ["token:admin-bot"]
    # One moment for all (the fake clock stands still): which, not in which order.
    assert {(e.action, e.target) for e in audit if e.action.startswith("token_")} == {
        ("token_create", "etl"),
        ("token_rotate", "etl"),
        ("token_revoke", "etl"),
    }
    async with _as(api, made["secret"]) as old, _as(api, rotated.json()["secret"]) as new:
        assert (await old.get("/jobs/shop")).status_code == 401
        assert (await new.get("/jobs/shop")).status_code == 401


async def test_only_admins_reach_the_token_routes(api: Api) -> None:
    async with api.client(Scope.WRITE) as writer, api.client(None) as nobody:
        refused = _problem(await writer.get("/tokens"), 403)
        _problem(await writer.post("/tokens", json={"name": "x", "scope": "read"}), 403)
        _problem(await nobody.post("/tokens/read-bot/rotate"), 401)

    assert "has scope write; this needs admin" in refused["detail"]


async def test_bad_token_requests_are_4xx_problems_and_write_nothing(api: Api) -> None:
    past = (api.clock.now() - timedelta(seconds=1)).isoformat()
    async with api.client() as admin:
        await _two_jobs(admin)
        in_the_past = _problem(
            await admin.post("/tokens", json={"name": "x", "scope": "read", "expires_at": past}),
            400,
        )
        unknown_job = _problem(
            await admin.post("/tokens", json={"name": "x", "scope": "read", "jobs": ["nope"]}),
            400,
        )
        naive = await admin.post(
            "/tokens", json={"name": "x", "scope": "read", "expires_at": "2031-01-01T00:00:00"}
        )
        taken = _problem(
            await admin.post("/tokens", json={"name": "read-bot", "scope": "read"}), 400
        )
        unknown = _problem(await admin.post("/tokens/nobody/rotate"), 404)
        long_grace = await admin.post("/tokens/read-bot/rotate", json={"grace_seconds": 10**9})
        gone = _problem(await admin.delete("/tokens/nobody"), 404)
        names = [t["name"] for t in (await admin.get("/tokens")).json()]

    assert in_the_past["detail"].startswith("token 'x': expiry ")
    assert in_the_past["detail"].endswith("is not in the future")
    assert unknown_job["detail"] == "token 'x': cannot be limited to no job 'nope'"
    assert naive.status_code == 422
    assert "taken by a live token" in taken["detail"]
    assert unknown["detail"] == "no live token 'nobody'"
    assert long_grace.status_code == 422
    assert gone["status"] == 404
    assert names == ["admin-bot", "read-bot", "write-bot"]


async def test_an_expired_token_gets_a_401_that_says_when_it_expired(api: Api) -> None:
    expiry = api.clock.now() + timedelta(hours=1)
    async with api.client() as admin:
        made = (
            await admin.post(
                "/tokens", json={"name": "ci", "scope": "read", "expires_at": expiry.isoformat()}
            )
        ).json()
    async with _as(api, made["secret"]) as ci:
        assert (await ci.get("/jobs")).status_code == 200
        api.clock.advance(3600)
        expired = await ci.get("/jobs")

    problem = _problem(expired, 401)
    assert problem["detail"] == f"token 'ci' expired at {expiry:%Y-%m-%d %H:%M:%S} UTC"
    assert expired.headers["www-authenticate"] == "Bearer"


async def test_a_rotated_secret_works_for_the_grace_then_gets_a_401_saying_so(api: Api) -> None:
    async with api.client() as admin:
        old = (await admin.post("/tokens", json={"name": "ci", "scope": "read"})).json()["secret"]
        rotated = await admin.post("/tokens/ci/rotate", json={"grace_seconds": 600})
    new = rotated.json()["secret"]
    async with _as(api, old) as with_old, _as(api, new) as with_new:
        assert (await with_old.get("/jobs")).status_code == 200
        api.clock.advance(600)
        refused = _problem(await with_old.get("/jobs"), 401)
        assert (await with_new.get("/jobs")).status_code == 200

    assert refused["detail"].startswith("secret of token 'ci' stopped working at ")


async def test_a_job_limited_token_sees_its_jobs_and_nothing_of_another(api: Api) -> None:
    async with api.client() as admin:
        await _two_jobs(admin)
        made = await admin.post(
            "/tokens", json={"name": "shop-bot", "scope": "write", "jobs": ["shop"]}
        )
        queued = await admin.post("/endpoints/ledger/close/run")
    ledger_run = queued.json()["id"]
    async with _as(api, made.json()["secret"]) as bot:
        own = [
            await bot.get("/jobs/shop"),
            await bot.get("/endpoints/shop/stock"),
            await bot.get("/runs", params={"job": "shop"}),
            await bot.get("/runs", params={"endpoint": "shop/stock"}),
            await bot.post("/endpoints/shop/stock/run"),
            await bot.get("/workers"),
            await bot.get("/cron/preview", params={"expr": "@daily"}),
        ]
        other = {
            "no job 'ledger'": [
                await bot.get("/jobs/ledger"),
                await bot.get("/runs", params={"job": "ledger"}),
            ],
            "no endpoint 'ledger/close'": [
                await bot.get("/endpoints/ledger/close"),
                await bot.get("/runs", params={"endpoint": "ledger/close"}),
                await bot.post("/endpoints/ledger/close/run"),
            ],
            f"no run '{ledger_run}'": [
                await bot.get(f"/runs/{ledger_run}"),
                await bot.post(f"/runs/{ledger_run}/cancel"),
            ],
        }
        jobs = await bot.get("/jobs")
        runs = await bot.get("/runs")
        every_job = [await bot.get("/audit"), await bot.get("/tokens")]
        applied = await bot.post("/apply", content=LEDGER)
        shop_run = own[4].json()["id"]
        own_run = await bot.get(f"/runs/{shop_run}")

    assert [r.status_code for r in own] == [200, 200, 200, 200, 202, 200, 200]
    assert own_run.status_code == 200
    for detail, responses in other.items():
        for response in responses:
            assert _problem(response, 404)["detail"] == detail
    assert [job["name"] for job in jobs.json()["items"]] == ["shop"]
    assert [run["id"] for run in runs.json()["items"]] == [shop_run]
    for response in every_job:
        assert _problem(response, 403)["status"] == 403
    assert _problem(applied, 403)["detail"] == (
        "token:shop-bot is limited to jobs shop: this needs a token of every job"
    )
