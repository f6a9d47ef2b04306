"""The console's buttons of issue 25 over HTTP: pause and resume a job from its view (the
endpoints of one job), cancel and retry a run from its page; each acts as the token."""

from __future__ import annotations

from cronpilot.domain.access.access import Scope
from cronpilot.domain.graph.dag import ALONE
from cronpilot.domain.model import RunStatus
from cronpilot.usecases.access import list_audit
from cronpilot.usecases.queries.catalog import show_endpoint, show_job
from cronpilot.usecases.run_control import clear_dag
from tests.contract.builders import run_once
from tests.integration.api.test_console import Console, console

__all__ = ["console"]


async def test_pause_and_resume_a_job_from_its_view(console: Console) -> None:
    async with console.signed_in(Scope.WRITE) as (client, csrf):
        view = await client.get("/console/endpoints", params={"job": "shop"})
        paused = await client.post(
            "/console/jobs/shop/pause", data={"csrf": csrf, "reason": "upkeep", "minutes": "30"}
        )
        shown = await client.get(paused.headers["location"])
        endpoint_page = await client.get("/console/endpoints/shop/stock")
        job, _ = await show_job(console.store.reading, "shop")
        no_reason = await client.post("/console/jobs/shop/resume", data={"csrf": "0" * len(csrf)})
        resumed = await client.post("/console/jobs/shop/resume", data={"csrf": csrf})
        unknown = await client.post("/console/jobs/etl/pause", data={"csrf": csrf, "reason": "x"})

    assert ">Pause job</button>" in view.text
    assert paused.headers["location"] == "/console/endpoints?job=shop&note=job-paused"
    assert "Job paused: none of its endpoints runs" in shown.text
    assert ">Resume job</button>" in shown.text and "is paused until" in shown.text
    assert '<dd id="job-paused">until' in endpoint_page.text
    assert job.pause is not None and (job.pause.reason, job.pause.by) == (
        "upkeep",
        "token:write-bot",
    )
    assert no_reason.status_code == 403
    assert resumed.headers["location"] == "/console/endpoints?job=shop&note=job-resumed"
    assert unknown.status_code == 404
    assert (await show_job(console.store.reading, "shop"))[0].pause is None
    audit = await list_audit(console.store.reading, actor="token:write-bot")
    assert sorted(e.action for e in audit) == ["pause", "resume"]


async def test_a_paused_jobs_endpoints_show_when_it_resumes(console: Console) -> None:
    async with console.signed_in(Scope.WRITE) as (client, csrf):
        await client.post(
            "/console/jobs/shop/pause", data={"csrf": csrf, "reason": "upkeep", "minutes": "30"}
        )
        listed = await client.get("/console/endpoints", params={"job": "shop"})
        endpoint_page = await client.get("/console/endpoints/shop/stock")

    # As `cronpilot endpoints list` says it: the slot due in a minute waits for the job.
    assert '<td class="next" data-label="Next run">in 30m (12:30:00Z)</td>' in listed.text
    assert "<dt>Next run</dt><dd>in 30m (12:30:00Z) <small>" in endpoint_page.text


async def test_cancel_and_retry_a_run_from_its_page(console: Console) -> None:
    async with console.signed_in(Scope.WRITE) as (client, csrf):
        await client.post("/console/endpoints/shop/stock/run", data={"csrf": csrf})
        [queued] = console.store.state.runs.values()
        page = await client.get(f"/console/runs/{queued.id}")
        cancelled = await client.post(f"/console/runs/{queued.id}/cancel", data={"csrf": csrf})
        again = await client.post(f"/console/runs/{queued.id}/cancel", data={"csrf": csrf})
        after = await client.get(cancelled.headers["location"])
        console.clock.advance(1)
        retried = await client.post(f"/console/runs/{queued.id}/retry", data={"csrf": csrf})

    # A queued run may be cancelled, not retried (a retry would be refused): Retry once ended.
    assert ">Cancel</button>" in page.text and ">Retry</button>" not in page.text
    assert cancelled.headers["location"] == f"/console/runs/{queued.id}?note=cancelled"
    assert again.status_code == 409
    assert ">Cancel</button>" not in after.text and "Cancelled." in after.text
    assert ">Retry</button>" in after.text
    assert retried.headers["location"].endswith("?note=retried")
    retry_id = retried.headers["location"].split("/")[-1].split("?")[0]
    assert (await show_endpoint(console.store.reading, "shop/stock")).endpoint.pause is None
    runs = {r.id: r.status for r in console.store.state.runs.values()}
    assert runs == {queued.id: RunStatus.CANCELLED, retry_id: RunStatus.QUEUED}


async def test_clear_a_dag_run_from_a_dependant_s_run_page(console: Console) -> None:
    now = console.clock.now()
    root = await run_once(console.store, now)
    # The dependant's run of that DAG run, as a DAG sweep starts it.
    await clear_dag(console.store.unit_of_work, None, root.id, "prices", actor="cli:t@h", now=now)
    [started] = await console.store.dag.claim_ready(now, "w1", 30.0, 1)
    child = await console.store.runs.get_run(started.run_id)
    async with console.signed_in(Scope.WRITE) as (client, csrf):
        root_page = await client.get(f"/console/runs/{root.id}")
        page = await client.get(f"/console/runs/{child.id}")
        cleared = await client.post(f"/console/runs/{child.id}/clear", data={"csrf": csrf})

    assert ">Clear DAG run from here</button>" not in root_page.text
    assert ">Clear DAG run from here</button>" in page.text
    assert cleared.headers["location"] == f"/console/runs/{child.id}?note=cleared"
    [wait] = await console.store.dag.list_waits()
    assert (wait.dag_run_id, wait.endpoint_id, wait.ready) == (
        root.trace_id,
        child.endpoint_id,
        True,
    )


async def test_retry_a_dependant_s_run_alone_from_its_page(console: Console) -> None:
    now = console.clock.now()
    root = await run_once(console.store, now)
    await clear_dag(console.store.unit_of_work, None, root.id, "prices", actor="cli:t@h", now=now)
    [started] = await console.store.dag.claim_ready(now, "w1", 30.0, 1)
    async with console.signed_in(Scope.WRITE) as (client, csrf):
        retried = await client.post(f"/console/runs/{started.run_id}/retry", data={"csrf": csrf})
        shown = await client.get(retried.headers["location"])

    assert retried.headers["location"] == f"/console/runs/{started.run_id}?note=retried-alone"
    assert "Retried: this endpoint alone runs again in this DAG run." in shown.text
    [wait] = await console.store.dag.list_waits()
    assert (wait.dag_run_id, wait.endpoint_id, wait.root) == (
        root.trace_id,
        started.endpoint.id,
        ALONE,
    )
