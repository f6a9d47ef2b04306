"""Endpoints: the table of `endpoints list` with filters, and one endpoint's page (timeline,
latest response beside its learnt schema, drift, recent runs) with pause, resume and run now."""

from __future__ import annotations

from datetime import datetime, timedelta
from enum import StrEnum
from http import HTTPStatus
from typing import Annotated
from urllib.parse import urlencode

from fastapi import Query, Request, Response
from fastapi.responses import RedirectResponse

from cronpilot.adapters.console.pages import (
    PREFIX,
    SignedIn,
    Writing,
    back,
    choice,
    console_router,
    render,
)
from cronpilot.adapters.console.timeline_chart import chart
from cronpilot.adapters.views.endpoints import (
    dangerous_text,
    in_force_text,
    last_run_text,
    next_run_text,
    rule_texts,
)
from cronpilot.adapters.views.quiet import quiet_text
from cronpilot.adapters.views.runs import run_view
from cronpilot.adapters.views.schedules import schedule_text
from cronpilot.adapters.web.context import Context
from cronpilot.domain.access.secrets import mask_headers, mask_url
from cronpilot.domain.errors import InvalidConfig
from cronpilot.domain.model import Pause, Run, RunStatus
from cronpilot.domain.schedule.governor import fresh_interval_hint
from cronpilot.domain.schedule.pauses import holds, job_holds, pause_end_after
from cronpilot.usecases.queries.catalog import (
    EndpointState,
    list_endpoints,
    list_jobs,
    show_endpoint,
)
from cronpilot.usecases.queries.outputs import show_output
from cronpilot.usecases.queries.planner import planner_mode
from cronpilot.usecases.queries.reach import check_target
from cronpilot.usecases.queries.runs import RunQuery, page_runs
from cronpilot.usecases.queries.timeline import endpoint_timeline
from cronpilot.usecases.run_requests import request_run
from cronpilot.usecases.schedule import pause_endpoint, pause_job, resume_endpoint, resume_job

router = console_router()

RECENT_RUNS = 15


class Condition(StrEnum):
    """What the endpoints table filters by: the one word that says how an endpoint is."""

    PAUSED = "paused"
    FAILING = "failing"
    HINTED = "hinted"
    NEW = "new"
    OK = "ok"


def condition(state: EndpointState, now: datetime) -> Condition:
    endpoint, run = state.endpoint, state.last_run
    if endpoint.pause is not None or job_holds(endpoint, now):
        return Condition.PAUSED
    if endpoint.failure_count or (
        run is not None and run.status in (RunStatus.FAILED, RunStatus.ABANDONED)
    ):
        return Condition.FAILING
    if fresh_interval_hint(endpoint, now) is not None or endpoint.oneshot_hint is not None:
        return Condition.HINTED
    return Condition.NEW if run is None else Condition.OK


class Window(StrEnum):
    TEN_MINUTES = "10m"
    HOUR = "1h"
    SIX_HOURS = "6h"
    DAY = "24h"
    WEEK = "7d"


LENGTHS = {
    Window.TEN_MINUTES: timedelta(minutes=10),
    Window.HOUR: timedelta(hours=1),
    Window.SIX_HOURS: timedelta(hours=6),
    Window.DAY: timedelta(days=1),
    Window.WEEK: timedelta(days=7),
}


@router.get("/endpoints")
async def endpoints(
    request: Request,
    ctx: Context,
    who: SignedIn,
    job: Annotated[str | None, Query()] = None,
    state: Annotated[str | None, Query()] = None,
) -> Response:
    now = ctx.clock.now()
    wanted = choice(Condition, "state", state)
    job = job or None
    states = await list_endpoints(ctx.store.reading, job, reach=who.reach)
    rows = [
        {
            "ref": s.endpoint.ref,
            "condition": condition(s, now).value,
            "in_force": in_force_text(s.endpoint, now),
            "next_run": next_run_text(s.endpoint, now),
            "source": s.endpoint.next_run_source.value,
            "last_run": last_run_text(s.last_run, now),
        }
        for s in states
    ]
    if wanted is not None:
        rows = [row for row in rows if row["condition"] == wanted.value]
    jobs = {j.job.name: j.job for j in await list_jobs(ctx.store.reading, reach=who.reach)}
    shown = jobs.get(job) if job is not None else None
    return render(
        request,
        "endpoints.html",
        who,
        now,
        rows=rows,
        jobs=list(jobs),
        job=job,
        job_pause=None if shown is None or not holds(shown.pause, now) else shown.pause,
        state=wanted,
        conditions=[c.value for c in Condition],
    )


def run_href(run: Run) -> str:
    return f"{PREFIX}/runs/{run.id}"


@router.get("/endpoints/{job}/{name}")
async def endpoint(
    *,
    request: Request,
    job: str,
    name: str,
    ctx: Context,
    who: SignedIn,
    window: Window = Window.HOUR,
) -> Response:
    now, ref = ctx.clock.now(), f"{job}/{name}"
    reading, reach = ctx.store.reading, who.reach
    found, mode = await planner_mode(reading, ref, reach=reach)
    recent = await page_runs(reading, RunQuery(endpoint=ref), RECENT_RUNS, reach=reach)
    latest = next((r for r in recent.items if r.body is not None), None)
    timeline = await endpoint_timeline(reading, ref, now - LENGTHS[window], now, reach=reach)
    hint = fresh_interval_hint(found, now)
    changes = (await show_endpoint(reading, ref, now, reach=reach)).changes
    return render(
        request,
        "endpoint.html",
        who,
        now,
        endpoint=found,
        url=mask_url(found.spec.url),
        headers=mask_headers(found.spec.headers),
        schedule=schedule_text(found.spec.schedule),
        in_force=in_force_text(found, now),
        next_run=next_run_text(found, now),
        quiet=quiet_text(found, now),
        dangerous=dangerous_text(found.spec),
        rules=rule_texts(found.spec),
        hint=hint,
        mode=mode.value,
        changes=changes,
        recent=[run_view(r, with_body=False) for r in recent.items],
        latest=None if latest is None else run_view(latest, with_body=True),
        newest=None if not recent.items else run_view(recent.items[0], with_body=False),
        learnt=await show_output(reading, ref, drift_limit=20, reach=reach),
        chart=chart(timeline, run_href),
        window=window.value,
        windows=[w.value for w in Window],
    )


def _page(job: str, name: str) -> str:
    return f"{PREFIX}/endpoints/{job}/{name}"


def _pause_asked(act: Writing, now: datetime, what: str) -> Pause:
    """The pause a console form asks for: a reason, and for how many minutes (none: until
    resumed)."""
    reason = act.text("reason")
    if not reason:
        raise InvalidConfig("reason", f"say why the {what} is paused")
    minutes = act.text("minutes")
    until = None
    if minutes:
        if not minutes.isdigit() or int(minutes) < 1:
            raise InvalidConfig("minutes", "a whole number of minutes, 1 or more")
        until = pause_end_after(int(minutes) * 60, now, "minutes")
    return Pause(reason, until)


@router.post("/endpoints/{job}/{name}/pause")
async def pause(job: str, name: str, ctx: Context, act: Writing) -> Response:
    now = ctx.clock.now()
    await check_target(ctx.store.reading, act.reach, endpoint=f"{job}/{name}")
    asked = _pause_asked(act, now, "endpoint")
    await pause_endpoint(ctx.store.unit_of_work, f"{job}/{name}", asked, act.actor, now)
    return back(_page(job, name), "paused")


def _job_view(job: str, note: str) -> RedirectResponse:
    """Back to the endpoints of `job` (the console's view of a job), with `note`."""
    query = urlencode({"job": job, "note": note})
    return RedirectResponse(f"{PREFIX}/endpoints?{query}", status_code=HTTPStatus.SEE_OTHER)


@router.post("/jobs/{job}/pause")
async def pause_whole_job(job: str, ctx: Context, act: Writing) -> Response:
    now = ctx.clock.now()
    await check_target(ctx.store.reading, act.reach, job=job)
    await pause_job(ctx.store.unit_of_work, job, _pause_asked(act, now, "job"), act.actor, now)
    return _job_view(job, "job-paused")


@router.post("/jobs/{job}/resume")
async def resume_whole_job(job: str, ctx: Context, act: Writing) -> Response:
    await check_target(ctx.store.reading, act.reach, job=job)
    await resume_job(ctx.store.unit_of_work, ctx.waker, job, act.actor, ctx.clock.now())
    return _job_view(job, "job-resumed")


@router.post("/endpoints/{job}/{name}/resume")
async def resume(job: str, name: str, ctx: Context, act: Writing) -> Response:
    await check_target(ctx.store.reading, act.reach, endpoint=f"{job}/{name}")
    await resume_endpoint(
        ctx.store.unit_of_work, ctx.waker, f"{job}/{name}", act.actor, ctx.clock.now()
    )
    return back(_page(job, name), "resumed")


@router.post("/endpoints/{job}/{name}/run")
async def run_now(job: str, name: str, ctx: Context, act: Writing) -> Response:
    await check_target(ctx.store.reading, act.reach, endpoint=f"{job}/{name}")
    await request_run(
        ctx.store.unit_of_work, ctx.waker, f"{job}/{name}", act.actor, ctx.clock.now()
    )
    return back(_page(job, name), "queued")
