"""The operators' routes (audit, workers, cron preview) as their CLI commands show the same
data, and the API's own request metrics, through real HTTP on loopback."""

from __future__ import annotations

from datetime import timedelta

from prometheus_client.parser import text_string_to_metric_families

from cronpilot.domain.access.access import Scope
from cronpilot.domain.runs.workers import WorkerInfo
from tests.contract.builders import add_endpoint, run_once
from tests.integration.api.conftest import JOBS, Api

PROBLEM = "application/problem+json"


async def test_audit_pages_newest_first_within_a_window(api: Api) -> None:
    async with api.client(Scope.WRITE) as writer:
        assert (await writer.post("/apply", content=JOBS)).status_code == 200
        for n in range(3):
            api.clock.advance(3600)
            paused = await writer.post("/endpoints/shop/stock/pause", json={"reason": f"n{n}"})
            assert paused.status_code == 200, paused.text
            api.clock.advance(60)
            assert (await writer.post("/endpoints/shop/stock/resume")).status_code == 200
    seen: list[tuple[str, str]] = []
    cursor = None
    async with api.client(Scope.ADMIN) as admin:
        while True:
            params = {"limit": 2, "actor": "token:write-bot"} | (
                {"cursor": cursor} if cursor else {}
            )
            page = (await admin.get("/audit", params=params)).json()
            seen += [(entry["action"], entry["actor"]) for entry in page["items"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert seen == [("resume", "token:write-bot"), ("pause", "token:write-bot")] * 3 + [
            ("apply", "token:write-bot")
        ]
        recent = (await admin.get("/audit", params={"since": "30m", "action": "pause"})).json()
        [last_pause] = recent["items"]
        assert "n2" in last_pause["detail"]
        bad = await admin.get("/audit", params={"action": "explode"})
        assert bad.status_code == 422
        assert bad.headers["content-type"] == PROBLEM
        unknown = await admin.get("/audit", params={"sinse": "1h"})
        assert unknown.status_code == 422
        assert "sinse" in unknown.json()["detail"]
    async with api.client(Scope.READ) as reader:
        assert (await reader.get("/audit")).status_code == 403


async def test_workers_lists_those_heard_from_lately(api: Api) -> None:
    now = api.clock.now()
    for worker_id, ago in (("w-old", 600), ("w-new", 5)):
        seen = now - timedelta(seconds=ago)
        await api.store.workers.beat(WorkerInfo(worker_id, "box-1", 42, "0.1.0", seen, seen))
    async with api.client(Scope.READ) as reader:
        listed = (await reader.get("/workers")).json()
    assert [(w["id"], w["host"], w["runs_last_minute"]) for w in listed["items"]] == [
        ("w-new", "box-1", 0)
    ]


async def test_cron_preview_gives_fire_times_and_refuses_a_bad_crontab(api: Api) -> None:
    async with api.client(Scope.READ) as reader:
        fires = await reader.get(
            "/cron/preview",
            params={
                "expr": "0 9 * * 1",
                "tz": "Europe/Paris",
                "count": 2,
                "after": "2027-01-01T00:00:00",
            },
        )
        assert fires.status_code == 200, fires.text
        assert fires.json()["fires"] == [
            {"at": "2027-01-04T08:00:00+00:00", "local": "2027-01-04T09:00:00+01:00"},
            {"at": "2027-01-11T08:00:00+00:00", "local": "2027-01-11T09:00:00+01:00"},
        ]
        for params, where in (
            ({"expr": "61 * * * *"}, "query.expr"),
            ({"expr": "* * * * *", "tz": "Mars/Base"}, "query.tz"),
        ):
            refused = await reader.get("/cron/preview", params=params)
            assert refused.status_code == 422
            assert refused.headers["content-type"] == PROBLEM
            body = refused.json()
            assert body["detail"].startswith(f"{where}: invalid schedule")
            assert "\n" not in body["detail"]
        assert (
            await reader.get("/cron/preview", params={"expr": "@daily", "count": 0})
        ).status_code == 422


def _counted(text: str, name: str, **labels: str) -> float:
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and labels.items() <= sample.labels.items():
                return sample.value
    return 0.0


async def test_requests_are_counted_by_route_template_never_by_path(api: Api) -> None:
    start = api.clock.now()
    await add_endpoint(api.store, "j", "e", start)
    made = [(await run_once(api.store, start + timedelta(minutes=n))).id for n in range(2)]
    async with api.client(Scope.READ) as reader:
        for run_id in made:
            assert (await reader.get(f"/runs/{run_id}")).status_code == 200
        assert (await reader.get("/runs/no-such-run")).status_code == 404
        assert (await reader.get("/no/such/route")).status_code == 404
        metrics = (await reader.get("/metrics")).text
    template = {"method": "GET", "route": "/runs/{run_id}"}
    assert _counted(metrics, "cronpilot_http_requests_total", **template, status="200") == 2
    assert _counted(metrics, "cronpilot_http_requests_total", **template, status="404") == 1
    assert _counted(metrics, "cronpilot_http_request_duration_seconds_count", **template) == 3
    assert _counted(metrics, "cronpilot_http_requests_total", route="unmatched") == 1
    assert made[0] not in metrics
    assert "/no/such/route" not in metrics
