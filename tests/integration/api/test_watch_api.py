"""Missed runs through the API (issue 25): the watch settings on `GET /endpoints/…`, and the
episode's alerts on `GET /notifications`, as `cronpilot notifications list --json` shows them."""

from __future__ import annotations

from cronpilot.domain.model import EndpointSpec, Job, Response, Schedule
from cronpilot.domain.ports import JobDeclaration
from cronpilot.scheduler.watch import Watch
from cronpilot.usecases.declarations import apply_to_catalog
from tests.integration.api.conftest import Api
from tests.support.finishing import finish_one

HOOK = "https://hooks.example.com/ops?token=hunter2"


async def test_a_missed_slot_and_its_recovery_are_listed_with_their_episode(api: Api) -> None:
    spec = EndpointSpec(
        "fetch",
        "https://api.example.com/fetch",
        Schedule(interval_seconds=60),
        notify=(HOOK,),
        missed_after_seconds=600,
        late_after_seconds=30,
    )
    start = api.clock.now()
    await apply_to_catalog(api.store.catalog, [JobDeclaration(Job("etl"), [spec])], start)
    watch = Watch(api.store, api.clock, 10, worker_stale_seconds=60)
    api.clock.advance(3600)
    assert await watch.check_once() == (1, 0)
    # A worker runs it at last.
    [claim] = await api.store.claims.claim_due(api.clock.now(), "w1", 60, 1)
    await finish_one(api.store.claims, claim, "w1", Response(status_code=200), api.clock.now())
    api.clock.advance(1)
    assert await watch.check_once() == (0, 1)

    async with api.client() as client:
        listed = (await client.get("/notifications", params={"job": "etl"})).json()["items"]
        shown = (await client.get("/endpoints/etl/fetch")).json()

    assert [(n["event"], n["payload"]["episode"]["kind"]) for n in listed] == [
        ("recovered", "missed"),
        ("missed", "missed"),
    ]
    assert listed[1]["payload"]["episode"]["started_at"] == start.isoformat()
    assert {n["url"] for n in listed} == {"https://hooks.example.com/ops?token=****"}
    assert (shown["missed_after_seconds"], shown["late_after_seconds"], shown["late_since"]) == (
        600,
        30,
        None,
    )
