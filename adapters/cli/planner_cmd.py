"""`cronpilot planner`: the planner worker, and `planner run-once` to analyse one endpoint now."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from typing import Annotated

import typer

from cronpilot.adapters.bootstrap import build_clock, open_planner, open_store
from cronpilot.adapters.cli.exit_codes import EXIT_CODES_HELP, EXIT_FAILED
from cronpilot.adapters.cli.output import EndpointRef, OutputOption, print_data
from cronpilot.adapters.cli.runtime import admin_settings, cli_settings
from cronpilot.adapters.cli.scheduler_cmd import MetricsPortOption, serve
from cronpilot.adapters.settings import Settings
from cronpilot.adapters.views.planner import autonomy_view, held_back, session_view
from cronpilot.domain.errors import InvalidConfig
from cronpilot.domain.model import PlannerMode
from cronpilot.domain.planning.planning import AnalysisSession, Proposal, SessionStatus
from cronpilot.usecases.queries.planner import (
    JobAutonomy,
    job_autonomy,
    list_proposals,
    planner_mode,
)


def _worker(
    ctx: typer.Context,
    worker_id: Annotated[
        str | None,
        typer.Option(help="This worker's name in leases (CRONPILOT_WORKER_ID)."),
    ] = None,
    metrics_port: MetricsPortOption = None,
) -> None:
    """Analyse endpoints with new runs and adapt their schedules until SIGINT/SIGTERM.

    Uses the LLM at CRONPILOT_LLM_BASE_URL (or with CRONPILOT_LLM_API_KEY), else the built-in
    freshness planner. Run as many as you like against one PostgreSQL database."""
    if ctx.invoked_subcommand is not None:
        return
    overrides = {"worker_id": worker_id, "metrics_port": metrics_port}
    settings = cli_settings().model_copy(
        update={name: value for name, value in overrides.items() if value is not None}
    )
    asyncio.run(serve(settings, scheduler=False, planner=True))


UNFINISHED = frozenset({SessionStatus.FAILED, SessionStatus.EXHAUSTED})
"""Sessions whose analysis did not end: `run-once` exits non-zero after showing them."""


def run_once(ref: EndpointRef, output: OutputOption = None) -> None:
    """Analyse one endpoint now, whatever its next analysis time, and show the session (its
    rules' session first, when it has rules), with each change held back and why. Exits 4 when
    the analysis failed or ran out of budget."""
    settings = admin_settings()
    sessions, proposals = asyncio.run(_run_once(settings, ref))
    if output:
        *earlier, last = sessions
        view = session_view(last, ref)
        view["proposals"] = [p.id for p in proposals]
        view["earlier_sessions"] = [session_view(s, ref) for s in earlier]
        print_data(output, view)
    else:
        for session in sessions:
            said = session.error or session.reasoning
            typer.echo(f"session {session.id}: {session.status.value}: {said}")
            for call, why in held_back(session):
                typer.echo(f"held back: {call}: {why}")
        for p in proposals:
            said = p.outcome or p.reason
            typer.echo(f"proposal {p.id}: {p.kind.value} {p.status.value}: {said}")
    if any(session.status in UNFINISHED for session in sessions):
        raise typer.Exit(EXIT_FAILED)


async def _run_once(settings: Settings, ref: str) -> tuple[list[AnalysisSession], list[Proposal]]:
    async with AsyncExitStack() as resources:
        store = await open_store(settings)
        resources.push_async_callback(store.close)
        endpoint, mode = await planner_mode(store.reading, ref)
        if mode is PlannerMode.OFF:
            raise InvalidConfig(
                f"endpoint {endpoint.ref}",
                "planner mode is off; set planner_mode review, auto or graded",
            )
        worker = await open_planner(settings, store, build_clock(), resources)
        sessions = await worker.analyse_now(endpoint.id)
        made = await list_proposals(store.reading, endpoint=endpoint.id)
        ids = {s.id for s in sessions}
        return sessions, [p for p in made.items if p.session_id in ids]


def autonomy(
    job: Annotated[str | None, typer.Option("--job", help="Only this job.")] = None,
    output: OutputOption = None,
) -> None:
    """The graded-autonomy threshold of each job, and the admins' decisions that taught it:
    proposals at or above it are applied, below it held for review (decision 0029)."""
    settings = admin_settings()
    shown = asyncio.run(_autonomy(settings, job))
    if output:
        print_data(output, [autonomy_view(a) for a in shown])
        return
    for found in shown:
        typer.echo(
            f"{found.job.name} ({found.job.planner_mode.value}): threshold {found.threshold:g}, "
            f"{len(found.history)} decisions"
        )
        for step in found.history:
            typer.echo(f"  {step.at.isoformat()}  {step.threshold:g}  {step.note}")


async def _autonomy(settings: Settings, job: str | None) -> list[JobAutonomy]:
    store = await open_store(settings)
    try:
        return await job_autonomy(store.reading, job)
    finally:
        await store.close()


def planner_app() -> typer.Typer:
    # Its help is in `main.COMMANDS`, for `cronpilot --help` to list it without this module.
    app = typer.Typer(
        epilog=EXIT_CODES_HELP,
        callback=_worker,
        invoke_without_command=True,
        add_completion=False,
    )
    app.command("run-once")(run_once)
    app.command("autonomy")(autonomy)
    return app
