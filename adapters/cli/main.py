"""The `cronpilot` command: the typer app, and the one place that turns errors into exit codes.

Exit codes (`EXIT_CODES_HELP`): 0 ok, 1 not found, 2 bad input (invalid settings, config or
schedule, unsafe URL, bad option), 3 store unavailable, 4 any other failure, 5 the run that
`run --wait` waited for did not succeed. Every error is one `error: …` line on stderr, never a
traceback, and never with a URL's credentials.
"""

from __future__ import annotations

import ast
import functools
import gc
import importlib
import importlib.util
import inspect
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, ClassVar, NoReturn

import typer

from cronpilot.adapters.cli.collector import collector_paused
from cronpilot.adapters.cli.exit_codes import (
    EXIT_BAD_INPUT,
    EXIT_CODES_HELP,
    EXIT_FAILED,
    EXIT_OK,
    exit_code,
)
from cronpilot.adapters.cli.lazy_group import Command, LazyGroup, Loader
from cronpilot.adapters.cli.output_command import OutputCommand
from cronpilot.adapters.error_line import error_line
from cronpilot.domain.errors import CronpilotError


@dataclass(frozen=True)
class Single:
    """A top-level command: `function` of the command module `module`."""

    module: str
    function: str


@dataclass(frozen=True)
class Group:
    """A group of commands of one command module, `NAME_cmd` for the group `NAME`: command
    name → function."""

    help: str
    commands: dict[str, str]


@dataclass(frozen=True)
class Built:
    """A group its command module builds: `function` returns its typer app, to which `more`
    adds commands of other modules: command name → (module, function); `help` is the group's."""

    help: str
    module: str
    function: str
    more: dict[str, tuple[str, str]] = field(default_factory=dict)


HARNESS = "cronpilot.harness"
"""The demo and the planner exams (`harness/`) are named by their full module path: no product
module imports the harness (import-linter), the CLI loads their commands by name."""


# Every command, in the order `--help` lists them. Only the module of the command invoked is
# imported (`LazyGroup`): a group's help is here so that listing the groups imports none.
COMMANDS: dict[str, Single | Group | Built] = {
    "apply": Single("apply_cmd", "apply"),
    "export": Single("export_cmd", "export"),
    "pause": Single("pause_cmd", "pause"),
    "resume": Single("pause_cmd", "resume"),
    "run": Single("run_cmd", "run"),
    "backfill": Single("run_cmd", "backfill"),
    "scheduler": Single("scheduler_cmd", "scheduler"),
    "demo": Single(f"{HARNESS}.demo.command", "demo"),
    "cron": Single("cron_cmd", "cron"),
    "delete": Single("delete_cmd", "delete"),
    "serve": Single("serve_cmd", "serve"),
    "mcp": Single("mcp_cmd", "mcp"),
    "search": Single("search_cmd", "search"),
    "doctor": Single("doctor_cmd", "doctor"),
    "db": Group("Database schema.", {"upgrade": "upgrade"}),
    "jobs": Group("Jobs: named groups of endpoints.", {"list": "list_jobs", "show": "show"}),
    "endpoints": Group(
        "Endpoints: one HTTP call on a schedule each.",
        {"list": "list_endpoints", "show": "show"},
    ),
    "runs": Group(
        "Runs: what the calls answered; cancel or retry one.",
        {"list": "list_runs", "show": "show", "cancel": "cancel", "retry": "retry"},
    ),
    "planner": Built(
        "The planner: adapts schedules from what endpoints answered.",
        "planner_cmd",
        "planner_app",
        {"eval": (f"{HARNESS}.exams.command", "eval_planners")},
    ),
    "proposals": Group(
        "Proposals: schedule changes the planner wants, and their review.",
        {"list": "list_proposals", "show": "show", "approve": "approve", "reject": "reject"},
    ),
    "approvals": Group(
        "Approvals: DAG dependants waiting for an admin, and the decision.",
        {"list": "list_approvals", "approve": "approve", "reject": "reject"},
    ),
    "sessions": Group(
        "Analysis sessions: what the planner read, proposed and concluded.",
        {"list": "list_sessions", "show": "show"},
    ),
    "schema": Group(
        "Output schemas learnt from stored responses.",
        {"show": "show", "backfill": "backfill"},
    ),
    "graph": Group(
        "The tool graph: which endpoints feed which.",
        {"show": "show", "suggest": "suggest", "path": "path", "export": "export"},
    ),
    "notifications": Group(
        "Alerts for webhooks: failing, recovered, auto-paused, to review, to approve.",
        {"list": "list_notifications", "redeliver": "redeliver"},
    ),
    "notify": Group("Alert destinations: send a test alert.", {"test": "test"}),
    "limits": Group(
        "Limits per target: calls in flight and slots held back.", {"list": "list_all"}
    ),
    "workers": Group(
        "Scheduler workers: who is working, where, and how much.",
        {"list": "list_workers"},
    ),
    "tokens": Group(
        "API tokens: who may call the HTTP API, and with which scope.",
        {"create": "create", "list": "list_all", "rotate": "rotate", "revoke": "revoke"},
    ),
    "audit": Group("The audit log: every write, and who made it.", {"list": "list_entries"}),
    "dag": Group("DAG runs: re-run one from a node down.", {"clear": "clear"}),
}


def _help_when_bare(ctx: typer.Context) -> None:
    # A group called alone shows its help and succeeds: nothing was asked, nothing failed.
    if ctx.invoked_subcommand is None:
        typer.echo(ctx.get_help())
        raise typer.Exit(EXIT_OK)


def _print_version(asked: bool) -> None:
    if asked:
        from importlib.metadata import version

        typer.echo(f"cronpilot {version('cronpilot')}")
        raise typer.Exit(EXIT_OK)


def _top_level(
    ctx: typer.Context,
    version: Annotated[
        bool,
        typer.Option(
            "--version", help="Print the version and exit.", callback=_print_version, is_eager=True
        ),
    ] = False,
) -> None:
    _help_when_bare(ctx)


def _group(
    help_text: str,
    *,
    completion: bool = False,
    cls: type[LazyGroup] | None = None,
    callback: Callable[..., None] = _help_when_bare,
) -> typer.Typer:
    return typer.Typer(
        help=help_text,
        epilog=EXIT_CODES_HELP,
        callback=callback,
        invoke_without_command=True,
        add_completion=completion,
        cls=cls,
    )


def _module_path(module: str) -> str:
    return module if module.startswith(f"{HARNESS}.") else f"cronpilot.adapters.cli.{module}"


def _function(module: str, name: str) -> Callable[..., Any]:
    # A command module imports most of what the command uses (the store, SQLAlchemy's
    # compiler…): as `entry.py` does for this module, with no collection walking it.
    with collector_paused():
        imported = importlib.import_module(_module_path(module))
    function: Callable[..., Any] = getattr(imported, name)
    return function


def _typer_app(name: str, where: Single | Group | Built) -> typer.Typer:
    if isinstance(where, Built):
        app: typer.Typer = _function(where.module, where.function)()
        app.info.help = where.help
        for command, (module, function) in where.more.items():
            app.command(command)(_function(module, function))
        return app
    if isinstance(where, Group):
        app = _group(where.help)
        for command, function in where.commands.items():
            app.command(command)(_function(f"{name}_cmd", function))
        return app
    app = typer.Typer(add_completion=False)
    app.command(name)(_function(where.module, where.function))
    return app


def _with_json_alias(app: typer.Typer) -> typer.Typer:
    """Every command of `app` takes `--json` for `--output json` (`OutputCommand`)."""
    for command in app.registered_commands:
        command.cls = OutputCommand
    return app


def _loader(name: str, where: Single | Group | Built) -> Loader:
    def load() -> Command:
        command = typer.main.get_command(_with_json_alias(_typer_app(name, where)))
        command.name = name
        return _unwrapped(command)

    return load


def _help(where: Single | Group | Built) -> Callable[[], str | None]:
    """What the help of the command at `where` will be once loaded, or None where it cannot
    tell: a group's is in `COMMANDS`, a command's is its function's docstring, read from its
    module's source (`_docstrings`) so that `cronpilot --help` imports no command module."""
    if isinstance(where, Group | Built):
        return lambda: unwrap(where.help)

    def docstring() -> str | None:
        text = _docstrings(where.module).get(where.function)
        return None if text is None else unwrap(text)

    return docstring


@functools.cache
def _docstrings(module: str) -> dict[str, str]:
    """The docstrings of the top-level functions of the command module `module`, read from its
    source without importing it (~1 ms a module; importing them all made `--help` take 0.46 s
    of CPU, not 0.12); none when its source cannot be read."""
    spec = importlib.util.find_spec(_module_path(module))
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        return {}
    try:
        source = Path(spec.origin).read_text(encoding="utf-8")
    except (OSError, UnicodeError):
        return {}
    functions = (
        node
        for node in ast.parse(source).body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    )
    return {
        function.name: docstring
        for function in functions
        if (docstring := ast.get_docstring(function)) is not None
    }


def _unwrapped(command: Command) -> Command:
    """`command` and its subcommands with their help's paragraphs each on one line (`unwrap`):
    rich wraps them at the terminal's width, not where the docstring's lines happen to end."""
    command.help = None if command.help is None else unwrap(command.help)
    for subcommand in getattr(command, "commands", {}).values():
        _unwrapped(subcommand)
    return command


def unwrap(text: str) -> str:
    """A docstring's paragraphs (blank-line separated) with their line breaks made spaces; a
    paragraph whose lines are indented or listed (`- `, `* `) keeps its breaks."""
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(
        paragraph if _laid_out(paragraph) else " ".join(paragraph.split())
        for paragraph in paragraphs
    )


def _laid_out(paragraph: str) -> bool:
    return paragraph.startswith("\b") or any(
        line.startswith((" ", "\t", "- ", "* ")) for line in paragraph.splitlines()
    )


class CronpilotGroup(LazyGroup):
    loaders: ClassVar[Mapping[str, Loader]] = {
        name: _loader(name, where) for name, where in COMMANDS.items()
    }
    helps: ClassVar[Mapping[str, Callable[[], str | None]]] = {
        name: _help(where) for name, where in COMMANDS.items()
    }


def build_app() -> typer.Typer:
    # `--install-completion` / `--show-completion` on the top level only: one script covers
    # every subcommand.
    return _group(
        "Calls HTTP endpoints on schedules and adapts the schedules safely.",
        completion=True,
        cls=CronpilotGroup,
        callback=_top_level,
    )


def _fail(message: str, code: int) -> NoReturn:
    typer.echo(f"error: {error_line(message)}", err=True)
    sys.exit(code)


def run(args: Sequence[str] | None = None) -> NoReturn:
    """Console-script entry point."""
    try:
        _run(args)
    finally:
        # At exit Python collects every object the process holds; after a read command that
        # is mostly SQLAlchemy's, pydantic's and typer's, and walking them took longer than
        # the command's own work (~0.2 s of ~0.6 s, `bench/cli_startup.py`). Frozen objects
        # are left to the operating system, which frees the memory all at once.
        gc.freeze()


def _run(args: Sequence[str] | None) -> NoReturn:
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
