"""A read command starts without what it does not use: the heavy libraries (the LLM client,
Alembic, networkx, aiohttp; asyncpg on SQLite, YAML without a jobs file), the other commands'
modules, the workers and the parts of the store it does not read. Deterministic: which modules
a fresh process imported, not how long it took (`bench/cli_startup.py` times it)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from tests.e2e.conftest import CLI_TIMEOUT, Cli, make_cli

HEAVY = (
    "openai",
    "alembic",
    "networkx",
    "aiohttp",
    "asyncpg",
    "yaml",
    "jsonschema",
    "mcp",
    "jinja2",
    # The search's embedder and index, the API server, the metrics.
    "numpy",
    "wordllama",
    "bm25s",
    "fastapi",
    "starlette",
    "uvicorn",
    "prometheus_client",
    "opentelemetry",
)
# Runs the CLI in this process as the console script does, then writes its exit code, every
# module it imported and whether the collector is on to the file named last.
PROBE = """
import gc, json, sys
from cronpilot.adapters.cli.entry import run
*args, report = sys.argv[1:]
sys.argv[1:] = args
try:
    run()
except SystemExit as exc:
    code = exc.code
with open(report, "w") as out:
    json.dump({"code": code, "modules": sorted(sys.modules), "collecting": gc.isenabled()}, out)
"""
JOBS = """\
jobs:
  - name: shop
    endpoints:
      - name: orders
        url: https://93.184.216.34/orders
        interval: 30s
"""
READ_COMMANDS = [
    ["--help"],
    ["runs", "--help"],
    ["jobs", "list"],
    ["endpoints", "list"],
    ["endpoints", "list", "--json"],
    ["endpoints", "show", "shop/orders"],
    ["runs", "list", "shop/orders"],
    ["proposals", "list"],
    ["sessions", "list"],
    ["notifications", "list"],
]


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Cli:
    home = tmp_path_factory.mktemp("startup")
    bound = make_cli(home, f"sqlite+aiosqlite:///{home / 'cronpilot.db'}")
    (home / "jobs.yaml").write_text(JOBS, encoding="utf-8")
    bound("db", "upgrade")
    bound("apply", "-f", "jobs.yaml")
    return bound


# What listing endpoints or runs has no use for: the workers, the wakers (for writes that
# move an endpoint earlier), the claims' SQL, the planner's and the graph's, the proposals' use
# case, the migrations, the endpoint state transitions (governor, alerts, planning rules), the
# planning and graph rules (proposals, sessions, the change rate of `endpoints show`, the
# tool graph) and the retries of PostgreSQL's partition housekeeping.
UNUSED_BY_LISTINGS = (
    "cronpilot.scheduler",
    "cronpilot.planner",
    "cronpilot.adapters.wake",
    "cronpilot.adapters.sql.claims",
    "cronpilot.adapters.sql.planner_repo",
    "cronpilot.adapters.sql.graph_repo",
    "cronpilot.adapters.sql.migrate",
    "cronpilot.usecases.proposals",
    "cronpilot.domain.runs.transitions",
    "cronpilot.domain.planning.planning",
    "cronpilot.domain.planning.change_rate",
    "cronpilot.domain.graph",
    "tenacity",
    # The web console is for `serve` (and `demo --serve`) only.
    "cronpilot.adapters.console",
)
CLI = "cronpilot.adapters.cli"
# `cronpilot demo` and `planner eval`, which no read command needs either.
HARNESS = "cronpilot.harness"
# The command modules no read command needs (`cronpilot --help` loads them all).
WRITING_OR_RUNNING = (
    "apply_cmd",
    "export_cmd",
    "pause_cmd",
    "run_cmd",
    "delete_cmd",
    "db_cmd",
    "tokens_cmd",
    "scheduler_cmd",
    "planner_cmd",
    "serve_cmd",
    "mcp_cmd",
    "graph_cmd",
)
LISTINGS = [["endpoints", "list"], ["runs", "list", "shop/orders"]]
# Listings lay out their tables themselves (`output.table_lines`): rich's console, styles and
# renderers are for the `show` sheets and the help.
RICH_RENDERING = ("rich.console", "rich.table", "rich.text", "rich.style", "rich.json")
PLAIN_LISTINGS = [a for a in READ_COMMANDS if "--help" not in a and "show" not in a]


def probe(cli: Cli, args: list[str]) -> dict[str, Any]:
    """What `cronpilot ARGS`, run as a fresh process, reported (`PROBE`); it must succeed."""
    report = cli.home / "modules.json"
    subprocess.run(
        [sys.executable, "-c", PROBE, *args, str(report)],
        cwd=cli.home,
        env=cli.env,
        capture_output=True,
        timeout=CLI_TIMEOUT,
        check=True,
    )
    found: dict[str, Any] = json.loads(report.read_text())
    assert found["code"] == 0
    return found


def imported(cli: Cli, args: list[str]) -> set[str]:
    """The modules `cronpilot ARGS` imported."""
    return set(probe(cli, args)["modules"])


def loaded(modules: set[str], names: tuple[str, ...]) -> list[str]:
    """Which of `names` (packages included) are among `modules`."""
    return sorted(n for n in names if any(m == n or m.startswith(f"{n}.") for m in modules))


@pytest.mark.parametrize("args", READ_COMMANDS, ids=" ".join)
def test_a_read_command_imports_none_of_the_heavy_libraries(cli: Cli, args: list[str]) -> None:
    assert loaded(imported(cli, args), HEAVY) == []


@pytest.mark.parametrize("args", [a for a in READ_COMMANDS if a[0] != "--help"], ids=" ".join)
def test_a_read_command_loads_no_module_of_the_commands_that_write_or_run(
    cli: Cli, args: list[str]
) -> None:
    modules = imported(cli, args)
    assert f"{CLI}.{args[0]}_cmd" in modules
    writing_or_running = (*(f"{CLI}.{name}" for name in WRITING_OR_RUNNING), HARNESS)
    assert loaded(modules, writing_or_running) == []


@pytest.mark.parametrize("args", LISTINGS, ids=" ".join)
def test_a_listing_loads_no_worker_and_only_the_store_it_reads(cli: Cli, args: list[str]) -> None:
    assert loaded(imported(cli, args), UNUSED_BY_LISTINGS) == []


def test_listing_proposals_loads_no_notification_store(cli: Cli) -> None:
    # The planner's store imports the notifications' SQL (and through it the alerts, the
    # retention rules, the watch episodes) only to add a proposal with its notifications.
    modules = imported(cli, ["proposals", "list"])
    assert "cronpilot.adapters.sql.planner_repo" in modules
    notifying = ("cronpilot.adapters.sql.notifications_repo", "cronpilot.domain.alerts.alerts")
    assert loaded(modules, notifying) == []


@pytest.mark.parametrize("args", PLAIN_LISTINGS, ids=" ".join)
def test_a_plain_listing_imports_none_of_rich_s_rendering(cli: Cli, args: list[str]) -> None:
    assert loaded(imported(cli, args), RICH_RENDERING) == []


def test_a_show_command_renders_its_sheet_with_rich(cli: Cli) -> None:
    # The counterpart of the test above: the probe sees rich when a command prints with it.
    assert "rich.console" in imported(cli, ["endpoints", "show", "shop/orders"])


def test_the_command_runs_with_the_collector_on(cli: Cli) -> None:
    # The console script pauses the collector for imports only (`adapters/cli/collector.py`):
    # a worker or the API server started by it must collect as any process does.
    assert probe(cli, ["endpoints", "list"])["collecting"] is True


def test_the_top_level_help_lists_every_command_with_its_help(cli: Cli) -> None:
    # Its commands are loaded for it: the help text of a command is its function's docstring.
    shown = cli("--help").stdout
    for command in ("apply", "demo", "serve", "graph", "planner", "tokens", "audit"):
        assert f" {command} " in shown
    assert "Serve the HTTP API" in shown
    assert "The tool graph: which endpoints feed which." in shown


def test_the_top_level_help_loads_no_command_module(cli: Cli) -> None:
    # It lists each command by the help it will have (`LazyGroup.helps`): no command module is
    # imported, nor the settings (pydantic) or the store that they import.
    modules = imported(cli, ["--help"])
    assert sorted(m for m in modules if m.startswith(f"{CLI}.") and m.endswith("_cmd")) == []
    unused = (f"{HARNESS}.demo.command", f"{HARNESS}.exams", "cronpilot.adapters.settings")
    assert loaded(modules, (*unused, "cronpilot.adapters.sql", "pydantic")) == []


def test_the_probe_sees_what_a_command_imports(cli: Cli) -> None:
    # `graph show` computes PageRank with networkx and loads the graph's SQL and rules: the
    # probe must notice them, or the tests above could not fail.
    modules = imported(cli, ["graph", "show"])
    assert loaded(modules, HEAVY) == ["networkx"]
    graph = ["cronpilot.adapters.sql.graph_repo", "cronpilot.domain.graph"]
    assert set(graph) <= set(loaded(modules, UNUSED_BY_LISTINGS))
    assert "cronpilot.adapters.cli.graph_cmd" in modules
