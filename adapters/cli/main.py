"""The `cronpilot` command: the typer app, and the one place that turns errors into exit codes.

Exit codes (`EXIT_CODES_HELP`): 0 ok, 1 not found, 2 bad input (invalid settings, config or
schedule, unsafe URL, bad option), 3 store unavailable, 4 any other failure, 5 the run that
`run --wait` waited for did not succeed. Every error is one `error: …` line on stderr, never a
traceback, and never with a URL's credentials.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import NoReturn

import typer

from cronpilot.adapters.cli import (
    apply_cmd,
    audit_cmd,
    cron_cmd,
    db_cmd,
    delete_cmd,
    demo_cmd,
    endpoints_cmd,
    export_cmd,
    graph_cmd,
    jobs_cmd,
    notifications_cmd,
    pause_cmd,
    planner_cmd,
    proposals_cmd,
    run_cmd,
    runs_cmd,
    scheduler_cmd,
    schema_cmd,
    serve_cmd,
    sessions_cmd,
    tokens_cmd,
    workers_cmd,
)
from cronpilot.adapters.cli.output import OutputCommand
from cronpilot.adapters.cli.runtime import (
    EXIT_BAD_INPUT,
    EXIT_CODES_HELP,
    EXIT_FAILED,
    EXIT_OK,
    exit_code,
)
from cronpilot.adapters.error_line import error_line
from cronpilot.domain.errors import CronpilotError


def _help_when_bare(ctx: typer.Context) -> None:
    # A group called alone shows its help and succeeds: nothing was asked, nothing failed.
    if ctx.invoked_subcommand is None:
        typer.echo(ctx.get_help())
        raise typer.Exit(EXIT_OK)


def _group(help_text: str, *, completion: bool = False) -> typer.Typer:
    return typer.Typer(
        help=help_text,
        epilog=EXIT_CODES_HELP,
        callback=_help_when_bare,
        invoke_without_command=True,
        add_completion=completion,
    )


def _with_json_alias(app: typer.Typer) -> typer.Typer:
    """Every command of `app` and of its groups, those added later included, takes `--json`
    for `--output json` (`OutputCommand`)."""
    for command in app.registered_commands:
        command.cls = OutputCommand
    for group in app.registered_groups:
        if group.typer_instance is not None:
            _with_json_alias(group.typer_instance)
    return app


def build_app() -> typer.Typer:
    # `--install-completion` / `--show-completion` on the top level only: one script covers
    # every subcommand.
    app = _group(
        "Calls HTTP endpoints on schedules and adapts the schedules safely.", completion=True
    )
    app.command()(apply_cmd.apply)
    app.command()(export_cmd.export)
    app.command()(pause_cmd.pause)
    app.command()(pause_cmd.resume)
    app.command("run")(run_cmd.run)
    app.command()(run_cmd.backfill)
    app.command()(scheduler_cmd.scheduler)
    app.command()(demo_cmd.demo)
    app.command()(cron_cmd.cron)
    app.command()(delete_cmd.delete)
    app.command()(serve_cmd.serve)
    _add_records(app)
    _add_planning(app)
    _add_operations(app)
    return _with_json_alias(app)


def _add_records(app: typer.Typer) -> None:
    db = _group("Database schema.")
    db.command()(db_cmd.upgrade)
    app.add_typer(db, name="db")

    jobs = _group("Jobs: named groups of endpoints.")
    jobs.command("list")(jobs_cmd.list_jobs)
    app.add_typer(jobs, name="jobs")

    endpoints = _group("Endpoints: one HTTP call on a schedule each.")
    endpoints.command("list")(endpoints_cmd.list_endpoints)
    endpoints.command()(endpoints_cmd.show)
    app.add_typer(endpoints, name="endpoints")

    runs = _group("Runs: what the calls answered.")
    runs.command("list")(runs_cmd.list_runs)
    runs.command()(runs_cmd.show)
    app.add_typer(runs, name="runs")


def _add_planning(app: typer.Typer) -> None:
    app.add_typer(planner_cmd.planner_app(), name="planner")

    proposals = _group("Proposals: schedule changes the planner wants, and their review.")
    proposals.command("list")(proposals_cmd.list_proposals)
    proposals.command()(proposals_cmd.show)
    proposals.command()(proposals_cmd.approve)
    proposals.command()(proposals_cmd.reject)
    app.add_typer(proposals, name="proposals")

    sessions = _group("Analysis sessions: what the planner read, proposed and concluded.")
    sessions.command("list")(sessions_cmd.list_sessions)
    sessions.command()(sessions_cmd.show)
    app.add_typer(sessions, name="sessions")

    schema = _group("Output schemas learnt from stored responses.")
    schema.command()(schema_cmd.show)
    schema.command()(schema_cmd.backfill)
    app.add_typer(schema, name="schema")

    graph = _group("The tool graph: which endpoints feed which.")
    graph.command()(graph_cmd.show)
    graph.command()(graph_cmd.suggest)
    graph.command()(graph_cmd.path)
    graph.command()(graph_cmd.export)
    app.add_typer(graph, name="graph")


def _add_operations(app: typer.Typer) -> None:
    notifications = _group("Alerts for webhooks: failing, recovered, auto-paused, to review.")
    notifications.command("list")(notifications_cmd.list_notifications)
    app.add_typer(notifications, name="notifications")

    workers = _group("Scheduler workers: who is working, where, and how much.")
    workers.command("list")(workers_cmd.list_workers)
    app.add_typer(workers, name="workers")

    tokens = _group("API tokens: who may call the HTTP API, and with which scope.")
    tokens.command()(tokens_cmd.create)
    tokens.command("list")(tokens_cmd.list_all)
    tokens.command()(tokens_cmd.revoke)
    app.add_typer(tokens, name="tokens")

    audit = _group("The audit log: every write, and who made it.")
    audit.command("list")(audit_cmd.list_entries)
    app.add_typer(audit, name="audit")


def _fail(message: str, code: int) -> NoReturn:
    typer.echo(f"error: {error_line(message)}", err=True)
    sys.exit(code)


def run(args: Sequence[str] | None = None) -> NoReturn:
    """Console-script entry point."""
    command = typer.main.get_command(build_app())
    try:
        result = command.main(args=args, prog_name="cronpilot", standalone_mode=False)
    except typer.TyperException as exc:
        # Click's usage errors (bad option or argument) exit 2 by definition; any other of its
        # failures says 1, which here means "not found".
        _fail(exc.format_message(), EXIT_BAD_INPUT if exc.exit_code == 2 else EXIT_FAILED)
    except typer.Abort:
        _fail("aborted", EXIT_FAILED)
    except CronpilotError as exc:
        _fail(str(exc), exit_code(exc))
    sys.exit(result if isinstance(result, int) else EXIT_OK)


if __name__ == "__main__":
    run()
