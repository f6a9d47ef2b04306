"""How long CLI commands take to start and answer, and which heavy libraries they import.

Each command runs `--repeat` times as a fresh process against a small SQLite database (one job,
two endpoints, no runs); the table gives the fastest wall time (the least disturbed by other
load on the machine), the median, and the fastest CPU time (user + system). With `--against
PATH` (another checkout of cronpilot, e.g. a `git worktree` of an older commit) the same
commands run on that code too, in the same run, and the ratios compare the two.

Bytecode is cached as for an installed package (in a folder of the run's own: the checkouts
are left as they are, whatever PYTHONDONTWRITEBYTECODE says), and every command runs once
unmeasured first. The `floor` row imports only the libraries no read command can do without
(typer, rich's character widths, asyncio, SQLAlchemy's async engine, aiosqlite) and
runs nothing: what is left above it is cronpilot's own.

    .venv/bin/python -m bench.cli_startup --against ../cronpilot-main
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.support import print_header, print_table

ROOT = Path(__file__).resolve().parents[1]
FLOOR = (
    # As the CLI imports (`adapters/cli/entry.py`): with the collector paused, then frozen.
    "import gc; gc.disable(); "
    # SQLAlchemy's async engine without the ORM, as `cronpilot.adapters.sql` imports it.
    "import typer, typer.core, rich.cells, asyncio, sqlalchemy, cronpilot.adapters.sql, "
    "sqlalchemy.ext.asyncio.engine, aiosqlite, sqlalchemy.dialects.sqlite.aiosqlite; "
    "gc.freeze()"
)
HEAVY = (
    "openai",
    "alembic",
    "networkx",
    "aiohttp",
    "yaml",
    "jsonschema",
    "asyncpg",
    "fastapi",
    "sqlalchemy.orm",
)
COMMANDS = (
    ("--help",),
    ("jobs", "list"),
    ("endpoints", "list"),
    ("endpoints", "list", "--json"),
    ("runs", "list", "shop/orders"),
    ("proposals", "list"),
)
JOBS = """
jobs:
  - name: shop
    description: a bench job
    endpoints:
      - name: orders
        url: https://api.example.com/orders
        interval: 30s
      - name: stock
        url: https://api.example.com/stock
        cron: "*/5 * * * *"
"""
# Runs the CLI from `tree` whatever this interpreter has installed: an editable install's
# finder would otherwise answer `import cronpilot` with its own checkout. With a file named in
# CRONPILOT_BENCH_MODULES it writes there the heavy libraries imported by the end.
LAUNCH = """
import atexit, json, os, runpy, sys
tree, heavy = sys.argv[1], json.loads(sys.argv[2])
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f)]
sys.path.insert(0, tree)
sys.argv = ["cronpilot", *sys.argv[3:]]
report = os.environ.get("CRONPILOT_BENCH_MODULES")
if report:
    def write():
        with open(report, "w") as out:
            json.dump(sorted(h for h in heavy if h in sys.modules), out)
    atexit.register(write)
# The console script's module, or the CLI's own in a tree older than it.
entry = os.path.join(tree, "adapters", "cli", "entry.py")
module = "entry" if os.path.exists(entry) else "main"
runpy.run_module(f"cronpilot.adapters.cli.{module}", run_name="__main__")
"""


@dataclass(frozen=True)
class Timing:
    wall_min: float
    wall_median: float
    cpu_min: float
    heavy: list[str]


def launch(tree: Path, *args: str) -> list[str]:
    """The command line running `cronpilot ARGS` from `tree`."""
    return [sys.executable, "-c", LAUNCH, str(tree), json.dumps(HEAVY), *args]


def cli(tree: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        launch(tree, *args),
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def prepare(tree: Path, home: Path) -> dict[str, str]:
    """A migrated SQLite database with the bench job applied, by `tree`'s own code."""
    home.mkdir(parents=True)
    (home / "jobs.yaml").write_text(JOBS)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("CRONPILOT_") and k != "PYTHONDONTWRITEBYTECODE"
    }
    env.update(
        PYTHONPYCACHEPREFIX=str(home / "pycache"),
        CRONPILOT_DATABASE_URL=f"sqlite+aiosqlite:///{home / 'bench.db'}",
        CRONPILOT_SECRET_KEY_FILE=str(home / "secret.key"),
        COLUMNS="100",
    )
    for args in (("db", "upgrade"), ("apply", "-f", str(home / "jobs.yaml"))):
        done = cli(tree, env, *args)
        if done.returncode != 0:
            raise SystemExit(f"{tree}: cronpilot {' '.join(args)} failed: {done.stderr}")
    return env


def timed(command: list[str], env: dict[str, str]) -> tuple[float, float, int, str]:
    """Wall and CPU seconds of one run of `command`, its exit code and stderr."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu, done.returncode, done.stderr


def measure_floor(env: dict[str, str], repeat: int) -> Timing:
    runs = [timed([sys.executable, "-c", FLOOR], env) for _ in range(repeat + 1)][1:]
    walls = [run[0] for run in runs]
    return Timing(min(walls), statistics.median(walls), min(run[1] for run in runs), [])


def measure(tree: Path, env: dict[str, str], args: tuple[str, ...], repeat: int) -> Timing:
    walls, cpus = [], []
    for attempt in range(repeat + 1):
        wall, cpu, code, stderr = timed(launch(tree, *args), env)
        if code != 0:
            raise SystemExit(f"{tree}: cronpilot {' '.join(args)} failed: {stderr}")
        if attempt > 0:  # the first run writes the bytecode cache
            walls.append(wall)
            cpus.append(cpu)
    with tempfile.NamedTemporaryFile(suffix=".json") as report:
        cli(tree, {**env, "CRONPILOT_BENCH_MODULES": report.name}, *args)
        heavy = json.loads(Path(report.name).read_text() or "[]")
    return Timing(min(walls), statistics.median(walls), min(cpus), heavy)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7, help="runs per command (default 7)")
    parser.add_argument(
        "--against", type=Path, help="another cronpilot checkout to compare with (before)"
    )
    options = parser.parse_args()
    print_header(" ".join(["python -m bench.cli_startup", *sys.argv[1:]]))
    trees = {"this tree": ROOT}
    if options.against is not None:
        trees = {"before": options.against.resolve(), "after": ROOT}
    with tempfile.TemporaryDirectory(prefix="cronpilot-bench-cli-") as workdir:
        envs = {
            name: prepare(tree, Path(workdir) / name.replace(" ", "-"))
            for name, tree in trees.items()
        }
        rows = []
        for args in COMMANDS:
            found = {
                name: measure(tree, envs[name], args, options.repeat)
                for name, tree in trees.items()
            }
            for name, timing in found.items():
                row: list[object] = [
                    "cronpilot " + " ".join(args),
                    name,
                    f"{timing.wall_min:.3f}",
                    f"{timing.wall_median:.3f}",
                    f"{timing.cpu_min:.3f}",
                    ", ".join(timing.heavy) or "-",
                ]
                if name == "after":
                    row.append(f"{found['before'].wall_min / timing.wall_min:.2f}x")
                elif name == "before":
                    row.append("")
                rows.append(row)
        floor = measure_floor(envs[list(trees)[-1]], options.repeat)
        rows.append(
            [
                "floor: typer, rich.cells, asyncio, SQLAlchemy (async engine), aiosqlite",
                "-",
                f"{floor.wall_min:.3f}",
                f"{floor.wall_median:.3f}",
                f"{floor.cpu_min:.3f}",
                "-",
                *([""] if options.against is not None else []),
            ]
        )
    headers = ["command", "code", "wall min (s)", "wall median (s)", "CPU min (s)", "imports"]
    if options.against is not None:
        headers.append("faster (wall min)")
    print_table("CLI start-up", headers, rows)


if __name__ == "__main__":
    main()
