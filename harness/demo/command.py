"""`cronpilot demo`: the scheduler against the simulator, on a throwaway SQLite database.

Everything shown — the live table and the summary — is read back from the database, so the demo
shows what cronpilot recorded, not what it meant to do.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.live import Live
from rich.logging import RichHandler
from rich.table import Table

from cronpilot.adapters.bootstrap import (
    build_approval_desk,
    build_clock,
    build_waker,
    migrate,
    open_store,
)
from cronpilot.adapters.cli.identity import actor
from cronpilot.adapters.cli.output import rich_table
from cronpilot.adapters.processes import serve_planner, serve_scheduler
from cronpilot.adapters.settings import Settings, load_settings
from cronpilot.adapters.views.formats import span
from cronpilot.adapters.views.schedules import schedule_text
from cronpilot.domain.errors import ApprovalNotPending
from cronpilot.domain.model import RunStatus
from cronpilot.domain.planning.approvals import ApprovalState
from cronpilot.domain.ports import Clock, JobDeclaration, Store
from cronpilot.harness.demo.console import demo_console
from cronpilot.harness.demo.planner_lines import PlannerLine, RuleLine, planner_lines, rule_lines
from cronpilot.harness.demo.summary import (
    DemoSummary,
    endpoint_path,
    failed,
    outcome,
    print_summary,
    summarise,
)
from cronpilot.usecases.declarations import apply_declarations
from cronpilot.usecases.queries.approvals import list_approvals
from cronpilot.usecases.queries.catalog import EndpointState, list_endpoints
from cronpilot.usecases.run_requests import request_run

REFRESH_SECONDS = 0.5
PLAIN_LINE_SECONDS = 5.0

SHOWCASE_JOBS = """
jobs:
  - name: showcase
    description: answers cronpilot records without storing a body
    # A little less than the schedules make: the built-in planner takes what daily-report's
    # unchanging answers do not need; the other endpoints have no clamps and keep theirs.
    budget: 10000/h
    endpoints:
      - name: status-page
        description: an HTML status page, recorded with the marker not_json
        url: ${SIMULATOR_URL}/status/page
        interval: 5s
      - name: export
        description: a 250 KB JSON export, above the cap, recorded as too_large
        url: ${SIMULATOR_URL}/reports/export
        interval: 10s
      - name: slow-report
        description: a report slower than its timeout, recorded as a timeout
        url: ${SIMULATOR_URL}/reports/slow
        interval: 5s
        timeout: 1s
      - name: daily-report
        description: a report that never changes; the built-in planner calls it less
        url: ${SIMULATOR_URL}/reports/daily
        interval: 1s
        max_interval: 16s
        planner_mode: auto
      - name: flaky
        description: fails every other call; a retry within the slot succeeds
        url: ${SIMULATOR_URL}/flaky/retried?fail=1&recover=1
        interval: 5s
        retry: {attempts: 3, backoff: 1s, max_backoff: 2s}
      - name: rate-limited
        description: every third call answers 429 with Retry-After 6 s; the next run waits for it
        url: ${SIMULATOR_URL}/flaky/limited?fail=1&recover=2&status=429&retry_after=6
        interval: 2s
      - name: alerting
        description: fails three calls in a row, then recovers; alerts go to the simulator
        url: ${SIMULATOR_URL}/flaky/alerting?fail=3&recover=4
        interval: 1s
        notify: {urls: ["${SIMULATOR_URL}/hooks/alerts"], after: 2}
"""
"""Demo-only endpoints next to the example jobs: they show what happens to answers that are not
stored, which a user's example file has no reason to contain, an answer that never changes,
which the built-in planner calls less (the example jobs' answers change all the time), a failure
retried within its slot, a `Retry-After` that moves the next run, and failure alerts."""
MANUAL_REF = "billing/usage"
MANUAL_AFTER_SECONDS = 3.0
"""The demo asks for a run of `MANUAL_REF` by hand this long after it starts, as
`cronpilot run` would."""
APPROVE_AFTER_SECONDS = 2.0
"""The demo approves each approval (billing/cleanup's) once it has waited this long, as an
admin would with `cronpilot approvals approve ID`."""
DEMO_LOOK_AGAIN_SECONDS = 1.0
"""The demo tells an hour of its story in a minute: the planner may look at an endpoint again
after a second, not the default minute, so the built-in planner steps the showcase's
unchanging report within the demo. The rules keep their default dwell and hourly limit
(decision 0032): the summary shows what held them back."""


def demo(
    duration: Annotated[
        float, typer.Option(min=1, help="Seconds to run (one flash sale lasts this long).")
    ] = 60,
    live: Annotated[
        bool, typer.Option("--live/--no-live", help="Live table, or plain periodic lines.")
    ] = True,
    seed: Annotated[int, typer.Option(help="Seed of the simulated story.")] = 7,
    serve: Annotated[
        bool,
        typer.Option(
            "--serve",
            help="Serve the API and the web console on 127.0.0.1 while the demo runs, and "
            "after it until Ctrl-C; prints the URL and the tokens to sign in with.",
        ),
    ] = False,
    port: Annotated[
        int, typer.Option(min=0, max=65535, help="The port of --serve (0: a free one).")
    ] = 8080,
) -> None:
    """Run the example jobs against a local simulator for a while, then summarise what ran."""
    console = Console()
    _log_quietly(Console(stderr=True) if not live else console)
    progress = Progress(build_clock(), console if live else None)

    def report(summary: DemoSummary, planner: list[PlannerLine], rules: list[RuleLine]) -> None:
        print_summary(summary, console, live)
        for said in [line.text() for line in planner] + [line.text() for line in rules]:
            typer.echo(said)

    with tempfile.TemporaryDirectory(prefix="cronpilot-demo-") as workdir:
        settings = _demo_settings(Path(workdir))
        migrate(settings)
        asyncio.run(
            _run(
                settings,
                duration,
                seed,
                progress,
                report=report,
                console_port=port if serve else None,
            )
        )


def _log_quietly(console: Console) -> None:
    """Warnings only, through rich so they print above the live table instead of through it;
    the worker's per-run lines would drown the demo, and the table shows them anyway."""
    logging.basicConfig(
        level=logging.WARNING,
        format="%(message)s",
        handlers=[RichHandler(console=console, show_path=False)],
        force=True,
    )


def _demo_settings(workdir: Path) -> Settings:
    """A private database and key in `workdir`; loopback allowed for this process only."""
    return load_settings(
        database_url=f"sqlite+aiosqlite:///{workdir / 'demo.db'}",
        secret_key_file=workdir / "secret.key",
        allowed_networks=["127.0.0.1/32"],
        worker_id="demo",
        lease_seconds=30,
        grace_seconds=2,
        max_sleep_seconds=1,
        planner_poll_seconds=1,
        planner_min_look_again_seconds=DEMO_LOOK_AGAIN_SECONDS,
        # The summary tells what each rules pass decided, a held-back one too: a minute's
        # passes are kept, where a service left running stores only news (decision 0032).
        planner_keep_quiet_sessions=True,
        reaper_interval_seconds=5,
        # An approved dependant starts at the next look for ready DAG waits.
        dag_sweep_seconds=1,
    )


def _declarations(settings: Settings, simulator_url: str) -> list[JobDeclaration]:
    from cronpilot.adapters.jobs_file import (  # as `apply` does
        example_jobs_file,
        load_declarations,
        parse_declarations,
    )

    env = {"SIMULATOR_URL": simulator_url}
    allowed, floor = settings.allowed_networks, settings.min_interval_seconds
    return [
        *load_declarations(example_jobs_file(), allowed, env, floor),
        *parse_declarations(SHOWCASE_JOBS, "demo showcase", allowed, env, floor),
    ]


@contextlib.contextmanager
def _stopping_on_signals(stop: asyncio.Event) -> Iterator[None]:
    """Ctrl-C (or SIGTERM) ends the demo early but still prints the summary."""
    loop = asyncio.get_running_loop()
    signals = (signal.SIGINT, signal.SIGTERM)
    for signum in signals:
        loop.add_signal_handler(signum, stop.set)
    try:
        yield
    finally:
        for signum in signals:
            loop.remove_signal_handler(signum)


async def _run(
    settings: Settings,
    duration: float,
    seed: int,
    progress: Progress,
    *,
    report: Callable[[DemoSummary, list[PlannerLine], list[RuleLine]], None],
    console_port: int | None,
) -> None:
    # The simulator is an aiohttp server: imported here, every other command's start is spared.
    from cronpilot.harness.simulator import Simulator

    clock = progress.clock
    started = clock.now()
    stop = asyncio.Event()
    async with contextlib.AsyncExitStack() as resources:
        simulator = Simulator(seed=seed, cycle_seconds=duration)
        simulator_url = await simulator.start()
        resources.push_async_callback(simulator.stop)
        store = await open_store(settings)
        resources.push_async_callback(store.close)
        declarations = _declarations(settings, simulator_url)
        await apply_declarations(
            store.unit_of_work, None, declarations, "demo", actor=actor(), now=clock.now()
        )
        typer.echo(
            f"cronpilot demo: {sum(len(d.endpoints) for d in declarations)} endpoints against "
            f"the simulator at "
            f"{simulator_url} for {span(duration)} (Ctrl-C ends early)"
        )
        resources.enter_context(_stopping_on_signals(stop))
        served = None
        if console_port is not None:
            served = await resources.enter_async_context(
                demo_console(settings, store, clock, console_port)
            )
            for line in served.lines():
                typer.echo(line)
        scheduler = asyncio.create_task(serve_scheduler(settings, store, clock, stop))
        # No LLM in the demo: the example jobs' rules and, for the showcase, the built-in
        # planner adapt the schedules.
        planner = asyncio.create_task(serve_planner(settings, store, clock, stop))
        helpers = [
            asyncio.create_task(_run_by_hand(settings, store, clock)),
            asyncio.create_task(_approve_by_hand(settings, store, clock)),
        ]
        try:
            await progress.follow(store, stop, scheduler, clock.now() + timedelta(seconds=duration))
        finally:
            stop.set()
            for helper in helpers:
                helper.cancel()
            await asyncio.gather(scheduler, planner, *helpers, return_exceptions=True)
        report(
            await summarise(store),
            await planner_lines(store),
            await rule_lines(store, started),
        )
        if served is not None:
            typer.echo(
                f"the demo's workers stopped; the console stays at {served.url}/console/ "
                "until Ctrl-C"
            )
            await served.closed()


async def _run_by_hand(settings: Settings, store: Store, clock: Clock) -> None:
    """Ask for one run of `MANUAL_REF` while the scheduler works, as `cronpilot run` does: it
    wakes the worker, which calls it at once, beside the endpoint's schedule."""
    await clock.sleep(MANUAL_AFTER_SECONDS)
    waker = build_waker(settings)
    try:
        await request_run(store.unit_of_work, waker, MANUAL_REF, actor(), clock.now())
    finally:
        await waker.close()


async def _approve_by_hand(settings: Settings, store: Store, clock: Clock) -> None:
    """Approve each approval that has waited `APPROVE_AFTER_SECONDS`, as `cronpilot approvals
    approve` does: the dependant then runs, a child of the run it waited after."""
    waker = build_waker(settings)
    desk = build_approval_desk(store, waker)
    try:
        while True:
            await clock.sleep(REFRESH_SECONDS)
            waiting = await list_approvals(store.reading, state=ApprovalState.PENDING)
            for approval in waiting.items:
                if clock.now() - approval.requested_at < timedelta(seconds=APPROVE_AFTER_SECONDS):
                    continue
                with contextlib.suppress(ApprovalNotPending):
                    await desk.approve(approval.id, actor(), "approved by the demo", clock.now())
    finally:
        await waker.close()


# --- while it runs ----------------------------------------------------------------------------


@dataclass(slots=True)
class Progress:
    """The database's view while the worker runs: a live table on `console`, or without one a
    plain line every few seconds."""

    clock: Clock
    console: Console | None

    async def follow(
        self, store: Store, stop: asyncio.Event, worker: asyncio.Task[None], deadline: datetime
    ) -> None:
        """Refresh until the deadline, a stop signal, or the worker ending on its own."""
        started = self.clock.now()
        last_line: datetime | None = None
        with contextlib.ExitStack() as display:
            board = (
                None if self.console is None else display.enter_context(Live(console=self.console))
            )
            while not stop.is_set() and not worker.done() and self.clock.now() < deadline:
                states = await list_endpoints(store.reading)
                now = self.clock.now()
                if board is not None:
                    board.update(_board(states, now, deadline))
                elif last_line is None or now - last_line >= timedelta(seconds=PLAIN_LINE_SECONDS):
                    typer.echo(_line(states, now - started))
                    last_line = now
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(REFRESH_SECONDS):
                        await stop.wait()


def _moment(moment: datetime | None, now: datetime) -> str:
    if moment is None:
        return "-"
    delta = (moment - now).total_seconds()
    if abs(delta) < 1:
        return "now"
    return f"in {span(delta)}" if delta > 0 else f"{span(-delta)} ago"


def _board(states: list[EndpointState], now: datetime, deadline: datetime) -> Table:
    table = rich_table("endpoint", "path", "source", "interval", "last", "last run", "next run")
    table.title = f"cronpilot demo — {span(max((deadline - now).total_seconds(), 0))} left"
    for state in states:
        endpoint, run = state.endpoint, state.last_run
        hint = endpoint.interval_hint
        table.add_row(
            endpoint.ref,
            endpoint_path(endpoint),
            endpoint.next_run_source.value,
            f"every {span(hint.interval_seconds)} (hint)"
            if hint is not None
            else schedule_text(endpoint.spec.schedule),
            outcome(run),
            _moment(run.started_at if run else None, now),
            _moment(endpoint.next_run_at, now),
        )
    return table


def _line(states: list[EndpointState], elapsed: timedelta) -> str:
    runs = [s.last_run for s in states if s.last_run is not None]
    failing = [f"{s.endpoint.ref} {outcome(s.last_run)}" for s in states if failed(s.last_run)]
    ok = sum(run.status is RunStatus.SUCCESS for run in runs)
    line = (
        f"t+{span(elapsed.total_seconds())}: {len(runs)}/{len(states)} endpoints ran, "
        f"last run ok on {ok}"
    )
    return f"{line}; failing: {', '.join(failing)}" if failing else line
