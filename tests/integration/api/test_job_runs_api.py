"""Job pause and resume, cancel and retry of a run, through real HTTP on loopback (issue 25),
on SQLite and PostgreSQL: each audited for the token, bad input a problem that loses nothing."""

from __future__ import annotations

from datetime import timedelta

from cronpilot.domain.access.access import Scope
from cronpilot.domain.graph.dag import ALONE
from cronpilot.domain.model import Finish, RunStatus
from cronpilot.usecases.access import list_audit
from tests.contract.builders import LEASE_SECONDS, OK, claim_one, run_once
from tests.integration.api.conftest import JOBS, Api
from tests.integration.api.test_api import _is_problem
from tests.support.finishing import finish_one, record_one


async def test_a_job_pause_holds_over_its_endpoints_own_and_resume_lifts_only_it(api: Api) -> None:
    until = (api.clock.now() + timedelta(hours=2)).isoformat()
    async with api.client(Scope.WRITE) as client:
        await client.post("/apply", content=JOBS)
        own = await client.post("/endpoints/shop/stock/pause", json={"reason": "mine"})
        paused = await client.post("/jobs/shop/pause", json={"reason": "upkeep", "until": until})
        job = (await client.get("/jobs/shop")).json()
        stock = (await client.get("/endpoints/shop/stock")).json()
        listed = (await client.get("/endpoints", params={"job": "shop"})).json()["items"]
        past = await client.post(
            "/jobs/shop/pause",
            json={"reason": "x", "until": (api.clock.now() - timedelta(hours=1)).isoformat()},
        )
        unknown = await client.post("/jobs/etl/pause", json={"reason": "x"})
        no_reason = await client.post("/jobs/shop/pause", json={})
        resumed = await client.post("/jobs/shop/resume")
        after = (await client.get("/endpoints/shop/stock")).json()

    assert own.status_code == paused.status_code == resumed.status_code == 200
    assert paused.json()["paused"] == {"reason": "upkeep", "until": until, "by": "token:write-bot"}
    assert job["paused"]["reason"] == "upkeep"
    assert (stock["paused"]["reason"], stock["job_paused"]["reason"]) == ("mine", "upkeep")
    assert {e["ref"]: e["job_paused"]["reason"] for e in listed} == {
        "shop/prices": "upkeep",
        "shop/stock": "upkeep",
    }
    assert "is not in the future" in str(_is_problem(past, 400)["detail"])
    assert _is_problem(unknown, 404)["detail"] == "no job 'etl'"
    _is_problem(no_reason, 422)
    assert resumed.json()["paused"] is None
    assert (after["paused"]["reason"], after["job_paused"]) == ("mine", None)
    # One moment on the fake clock: the log's order among them is its ids'.
    entries = await list_audit(api.store.reading, actor="token:write-bot")
    assert {(e.action, e.target) for e in entries} == {
        ("apply", "request body"),
        ("pause", "shop/stock"),
        ("pause", "shop"),
        ("resume", "shop"),
    }


async def test_cancel_and_retry_a_run_and_refuse_what_cannot_be(api: Api) -> None:
    async with api.client(Scope.WRITE) as client:
        await client.post("/apply", content=JOBS)
        finished = await run_once(api.store, api.clock.now())
        api.clock.advance(1)
        queued = (await client.post("/endpoints/shop/stock/run")).json()
        cancelled = await client.post(f"/runs/{queued['id']}/cancel")
        again = await client.post(f"/runs/{queued['id']}/cancel")
        api.clock.advance(1)
        done = await client.post(f"/runs/{finished.id}/cancel")
        unknown = await client.post("/runs/nope/cancel")
        retried = await client.post(f"/runs/{finished.id}/retry")
        retry_unknown = await client.post("/runs/nope/retry")
    async with api.client(Scope.READ) as reader:
        refused = await reader.post(f"/runs/{finished.id}/cancel")

    assert cancelled.status_code == 200
    shown = cancelled.json()
    assert (shown["status"], shown["cancel_requested_by"]) == ("cancelled", "token:write-bot")
    detail = f"run {queued['id']} has finished (cancelled): nothing to cancel"
    assert _is_problem(again, 409)["detail"] == detail
    assert "has finished (success)" in str(_is_problem(done, 409)["detail"])
    assert _is_problem(unknown, 404)["detail"] == "no run 'nope'"
    assert retried.status_code == 202
    retry = retried.json()
    assert (retry["status"], retry["trigger"], retry["endpoint_id"]) == (
        "queued",
        "manual",
        finished.endpoint_id,
    )
    _is_problem(retry_unknown, 404)
    _is_problem(refused, 403)
    assert (await api.store.runs.get_run(finished.id)).status is RunStatus.SUCCESS
    entries = await list_audit(api.store.reading, actor="token:write-bot")
    assert {(e.action, e.detail) for e in entries if e.action in ("cancel", "retry")} == {
        ("retry", f"run {retry['id']} retries run {finished.id}"),
        ("cancel", f"run {queued['id']} before it started"),
    }


async def test_clear_a_dag_run_from_a_dependant_and_refuse_what_cannot_be(api: Api) -> None:
    async with api.client(Scope.WRITE) as client:
        await client.post("/apply", content=JOBS)
        root = await run_once(api.store, api.clock.now())
        cleared = await client.post(f"/runs/{root.id}/clear", json={"node": "prices"})
        the_root = await client.post(f"/runs/{root.id}/clear", json={"node": "stock"})
        unknown_node = await client.post(f"/runs/{root.id}/clear", json={"node": "nope"})
        unknown_run = await client.post("/runs/nope/clear", json={"node": "prices"})
        no_node = await client.post(f"/runs/{root.id}/clear", json={})

    assert cleared.status_code == 202
    assert cleared.json() == {"cleared": "shop/prices"}
    [wait] = await api.store.dag.list_waits()
    prices = await api.store.catalog.get_endpoint("shop/prices")
    assert (wait.dag_run_id, wait.endpoint_id, wait.ready) == (root.trace_id, prices.id, True)
    assert wait.arrived["stock"].run_id == root.id
    assert "is the DAG run's root" in str(_is_problem(the_root, 400)["detail"])
    assert "not an endpoint of job 'shop'" in str(_is_problem(unknown_node, 400)["detail"])
    _is_problem(unknown_run, 404)
    _is_problem(no_node, 422)


async def test_retry_of_a_dependants_run_re_runs_it_alone_in_its_dag_run(api: Api) -> None:
    async with api.client(Scope.WRITE) as client:
        await client.post("/apply", content=JOBS)
        now = api.clock.now()
        claim = await claim_one(api.store, now)
        recorded = await record_one(api.store.claims, Finish(claim, "w1", OK, now, LEASE_SECONDS))
        root = recorded.run
        [started] = recorded.started
        child = await finish_one(api.store.claims, started, "w1", OK, now)
        prices = await api.store.catalog.get_endpoint("shop/prices")
        retried = await client.post(f"/runs/{child.id}/retry")

    assert child.dag_run_id == root.trace_id
    assert retried.status_code == 202
    assert retried.json() == {"rerun": "shop/prices"}
    [wait] = await api.store.dag.list_waits()
    assert (wait.dag_run_id, wait.endpoint_id, wait.ready, wait.root) == (
        root.trace_id,
        prices.id,
        True,
        ALONE,
    )
    assert wait.arrived["stock"].run_id == root.id
    entries = await list_audit(api.store.reading, actor="token:write-bot")
    assert ("retry", f"run {child.id} again alone in DAG run {root.trace_id}") in {
        (e.action, e.detail) for e in entries
    }
