"""A read command starts without the heavy libraries it does not use: the LLM client, Alembic,
networkx, aiohttp (and asyncpg on SQLite, YAML without a jobs file). Deterministic: which
modules a fresh process imported, not how long it took (`bench/cli_startup.py` times it)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.e2e.conftest import CLI_TIMEOUT, Cli, make_cli

HEAVY = ("openai", "alembic", "networkx", "aiohttp", "asyncpg", "yaml", "jsonschema")
# Runs the CLI in this process, then writes which of HEAVY it imported to the file named last.
PROBE = """
import json, sys
from cronpilot.adapters.cli.main import run
*args, report, heavy = sys.argv[1:]
try:
    run(args)
except SystemExit as exc:
    code = exc.code
loaded = sorted({m.split(".")[0] for m in sys.modules} & set(json.loads(heavy)))
with open(report, "w") as out:
    json.dump({"code": code, "loaded": loaded}, out)
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


@pytest.mark.parametrize("args", READ_COMMANDS, ids=" ".join)
def test_a_read_command_imports_none_of_the_heavy_libraries(cli: Cli, args: list[str]) -> None:
    report = cli.home / "modules.json"
    subprocess.run(
        [sys.executable, "-c", PROBE, *args, str(report), json.dumps(HEAVY)],
        cwd=cli.home,
        env=cli.env,
        capture_output=True,
        timeout=CLI_TIMEOUT,
        check=True,
    )
    found = json.loads(report.read_text())
    assert found == {"code": 0, "loaded": []}


def test_the_probe_sees_a_heavy_library_when_a_command_uses_one(cli: Cli) -> None:
    # `graph show` computes PageRank with networkx: the probe must notice it.
    report = cli.home / "modules.json"
    subprocess.run(
        [sys.executable, "-c", PROBE, "graph", "show", str(report), json.dumps(HEAVY)],
        cwd=cli.home,
        env=cli.env,
        capture_output=True,
        timeout=CLI_TIMEOUT,
        check=True,
    )
    assert "networkx" in json.loads(report.read_text())["loaded"]
