"""Soak: the example jobs left alone for a month on a fake clock, and whether the records stay
bounded.

    python -m bench.soak [--days 30] [--backend sqlite|postgres] [--step 3607] [--copies 1]
                         [--retention-days N] [--retention-runs N]

The example jobs (`adapters/examples/jobs.yaml`, `--copies` times under numbered job names)
are played by the shipped workers with the planner on (heuristic and rules) and the default
settings (`bench.player`), while an admin rejects every pending proposal after each step. Once
per simulated day it counts the rows of every table that grew, the tool calls and rule
evaluations stored in the sessions, and the database's size (the SQLite file with its
write-ahead log; `pg_database_size` on PostgreSQL). At the end it judges each column against
its peak in the day after its retention window filled: flat if it ends no more than
`FLAT_TOLERANCE` (and `FLAT_SLACK` rows) above that peak. Retention settings are read from
the environment as a worker reads them (`CRONPILOT_RETENTION_SESSIONS_DAYS=...`), or
shortened with the options.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import math
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import yaml
from sqlalchemy import func, select, text
from sqlalchemy.ext.asyncio import AsyncEngine

from bench.player import Moment, play, reject_pending
from bench.support import bench_settings, database, open_store, print_header, print_table
from cronpilot.adapters.bootstrap import is_postgres, sqlite_file
from cronpilot.adapters.jobs_file import example_jobs_file
from cronpilot.adapters.settings import Settings
from cronpilot.adapters.sql.tables import analysis_sessions, metadata

DAY = 86_400.0
UNITS = {"_days": 1.0, "_hours": 24.0, "_minutes": 1440.0, "_seconds": DAY}
"""A retention setting's unit, from its name's ending, and how many of it make a day."""
SESSION_PARTS = {"tool_calls": "sessions"}
"""Counts stored inside the sessions, kept as long as their sessions (unless a setting of
their own says otherwise, as `retention_rule_evaluations_days` may)."""
STEP = 3607.0
"""An hour and a few seconds, a prime number of them: the simulator's cycles (20 s, 60 s) are
read at every phase, and a month takes about five minutes (a step costs ~0.3 s of CPU)."""
FLAT_TOLERANCE = 0.05
"""Growth past the windows still called flat: prunes run every few minutes, so a count read
at the day's end sits anywhere in one prune's sawtooth."""
FLAT_SLACK = 20
"""Rows of slack on top, for tables of a handful of rows."""
REJECTION = "soak: the admin turns every proposal down"
SIZE = "database size"
JSON_COUNTS = {"tool_calls": "tool calls", "rule_evaluations": "rule evaluations"}
"""JSON arrays of `analysis_sessions` counted element by element."""
NAMES = {
    "runs": "runs",
    "analysis_sessions": "sessions",
    "tool_calls": "tool calls",
    "rule_evaluations": "rule evaluations",
    "proposals": "proposals",
    "notifications": "notifications",
    "audit_log": "audit",
    "autonomy_steps": "autonomy steps",
    "approvals": "approvals",
}
"""Column titles, in this order, of the tables the issue names; any other table that grew is
shown after them under its own name."""


@dataclass(frozen=True)
class Sample:
    days: float
    rows: dict[str, int]
    size_bytes: int


class LogCounts(logging.Handler):
    """Records per level: a month of warnings would drown the table."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.levels: Counter[str] = Counter()
        self.first_error: str | None = None

    def emit(self, record: logging.LogRecord) -> None:
        self.levels[record.levelname] += 1
        if record.levelno >= logging.ERROR and self.first_error is None:
            self.first_error = self.format(record)


def example_jobs(copies: int) -> str:
    """The example jobs file, `copies` times (the copies' jobs named `flash-sale-2`…)."""
    document = yaml.safe_load(example_jobs_file().read_text(encoding="utf-8"))
    jobs = []
    for copy in range(1, copies + 1):
        for job in document["jobs"]:
            jobs.append(job if copy == 1 else {**job, "name": f"{job['name']}-{copy}"})
    return yaml.safe_dump({"jobs": jobs}, sort_keys=False)


def retention_windows(settings: Settings, step: float) -> dict[str, float]:
    """Each retention setting's window in days, by the name of what it keeps
    (`retention_sessions_days` → `sessions`): the time-based ones as set, and runs (kept by
    count per endpoint) filled after `retention_runs` steps at one run per step."""
    windows = {"runs": settings.retention_runs * step / DAY}
    for name in Settings.model_fields:
        if name.startswith("retention_") and name != "retention_runs":
            kept = name.removeprefix("retention_")
            for unit in UNITS:
                kept = kept.removesuffix(unit)
            windows[kept] = _days(name, getattr(settings, name))
    return windows


def _per_day(name: str) -> float:
    return next((n for unit, n in UNITS.items() if name.endswith(unit)), DAY)


def _days(name: str, value: Any) -> float:
    if isinstance(value, timedelta):
        return value / timedelta(days=1)
    return float(value) / _per_day(name)


def shortened(settings: Settings, days: float, runs: int | None = None) -> Settings:
    """`settings` with every time-based retention window `days` long (in each setting's own
    unit), and `runs` runs kept per endpoint when given."""
    update: dict[str, Any] = {} if runs is None else {"retention_runs": runs}
    for name, info in Settings.model_fields.items():
        if name.startswith("retention_") and name != "retention_runs":
            if info.annotation is timedelta:
                update[name] = timedelta(days=days)
            else:
                value = days * _per_day(name)
                update[name] = math.ceil(value) if info.annotation is int else value
    return settings.model_copy(update=update)


def window_of(column: str, windows: dict[str, float]) -> float | None:
    """The retention window that bounds `column` (a table, or a JSON count of the sessions):
    the setting named like it (`audit` keeps `audit_log`, `sessions` keeps
    `analysis_sessions`), for the sessions' tool calls the sessions'."""
    column = SESSION_PARTS.get(column, column)
    for kept, days in windows.items():
        if column == kept or column.startswith(f"{kept}_") or column.endswith(f"_{kept}"):
            return days
    return None


async def count_rows(engine: AsyncEngine) -> dict[str, int]:
    """Rows per table, and the JSON arrays of the sessions counted element by element."""
    length = "jsonb_array_length" if engine.dialect.name == "postgresql" else "json_array_length"
    counts: dict[str, int] = {}
    async with engine.connect() as conn:
        for table in metadata.sorted_tables:
            counts[table.name] = (
                await conn.execute(select(func.count()).select_from(table))
            ).scalar_one()
        for column in JSON_COUNTS:
            if column in analysis_sessions.c:
                total = select(
                    func.coalesce(func.sum(getattr(func, length)(analysis_sessions.c[column])), 0)
                )
                counts[column] = (await conn.execute(total)).scalar_one()
    return counts


async def database_size(engine: AsyncEngine, database_url: str) -> int:
    if is_postgres(database_url):
        async with engine.connect() as conn:
            query = text("SELECT pg_database_size(current_database())")
            return int((await conn.execute(query)).scalar_one())
    path = sqlite_file(database_url)
    if path is None:
        return 0
    files = [path, Path(f"{path}-wal")]
    return sum(f.stat().st_size for f in files if f.exists())


async def soak(
    settings: Settings,
    *,
    days: float,
    step: float,
    copies: int,
    every: float = DAY,
    progress: Callable[[Sample], None] = lambda _: None,
) -> list[Sample]:
    """Play the example jobs (`copies` of them) for `days` on `settings.database_url` (migrated
    and empty), rejecting every pending proposal after each step; a sample after the first
    step (the jobs applied, each endpoint called once), then every `every` simulated
    seconds (each also handed to `progress`)."""
    store = await open_store(settings.database_url)
    samples: list[Sample] = []

    async def sample(moment: Moment) -> None:
        taken = Sample(
            moment.elapsed / DAY,
            await count_rows(store.engine),
            await database_size(store.engine, settings.database_url),
        )
        samples.append(taken)
        progress(taken)

    async def admin(moment: Moment) -> None:
        await reject_pending(moment, REJECTION)
        if not samples or moment.elapsed // every > (moment.elapsed - step) // every:
            await sample(moment)

    try:
        await play(
            settings,
            store,
            example_jobs(copies),
            seconds=days * DAY,
            step=step,
            after_step=admin,
        )
    finally:
        await store.close()
    return samples


def grown(samples: Sequence[Sample]) -> list[str]:
    """The tables (and JSON counts) whose rows changed over the run, the issue's first."""
    first, last = samples[0].rows, samples[-1].rows
    changed = [name for name in last if last[name] != first.get(name, 0)]
    named = [name for name in NAMES if name in changed]
    return named + sorted(set(changed) - set(named))


@dataclass(frozen=True)
class Judged:
    """One column's verdict: flat once its window has passed, or not (yet) judged."""

    column: str
    window_days: float | None
    """None: no retention setting bounds it (judged past the longest window)."""
    from_days: float | None
    """When the window filled: its peak in the next day is what the end is judged against;
    None if the run ends too soon after the window."""
    start: int = 0
    end: int = 0

    @property
    def flat(self) -> bool | None:
        if self.from_days is None:
            return None
        return self.end <= self.start * (1 + FLAT_TOLERANCE) + FLAT_SLACK


def judge(samples: Sequence[Sample], windows: dict[str, float]) -> list[Judged]:
    """Each grown column (and the database size) judged from the day after its window filled
    (the size, and columns no setting bounds, after the longest): flat when its last value is
    no more than `FLAT_TOLERANCE` (and `FLAT_SLACK`) above its peak in that day. A count read
    at any moment sits somewhere in the prunes' sawtooth and in the planner's busier and
    quieter hours; a leak grows past that first day's peak and keeps growing."""
    longest = max(windows.values())
    columns = [*grown(samples), SIZE]
    verdicts = []
    for column in columns:
        window = None if column == SIZE else window_of(column, windows)
        filled = longest if window is None else window
        first_day = [s for s in samples if filled <= s.days < filled + 1]
        if not first_day or samples[-1].days < filled + 1:
            verdicts.append(Judged(column, window, None))
            continue
        peak = max(_value(s, column) for s in first_day)
        verdicts.append(Judged(column, window, filled, peak, _value(samples[-1], column)))
    return verdicts


def _value(sample: Sample, column: str) -> int:
    return sample.size_bytes if column == SIZE else sample.rows.get(column, 0)


def report(samples: Sequence[Sample], windows: dict[str, float]) -> list[Judged]:
    """Print the day-by-day table and the verdicts; returns the verdicts."""
    names = grown(samples)
    rows = [
        [f"{s.days:.2f}", *(s.rows.get(name, 0) for name in names), f"{s.size_bytes / 1e6:.1f}"]
        for s in samples
    ]
    print_table(
        "Rows per table and database size, per simulated day",
        ["day", *(NAMES.get(name, name) for name in names), "size MB"],
        rows,
    )
    verdicts = judge(samples, windows)
    verdict_rows = [
        [
            NAMES.get(v.column, v.column),
            "-" if v.window_days is None else f"{v.window_days:.3g}",
            "-" if v.from_days is None else f"{v.from_days:.2f}",
            "-" if v.from_days is None else v.start,
            "-" if v.from_days is None else v.end,
            {True: "flat", False: "growing", None: "not judged (window too long)"}[v.flat],
        ]
        for v in verdicts
    ]
    print_table(
        "Flat after the retention windows?",
        ["column", "window (days)", "filled on day", "peak that day", "at the end", "verdict"],
        verdict_rows,
    )
    judged = [v.flat for v in verdicts if v.flat is not None]
    print(
        f"flat after the retention windows: {'yes' if judged and all(judged) else 'no'} "
        f"({judged.count(True)} flat, {judged.count(False)} growing, "
        f"{len(verdicts) - len(judged)} not judged)"
    )
    return verdicts


def _progress(sample: Sample) -> None:
    """A line per sample on stderr while the month goes by."""
    rows = ", ".join(f"{NAMES[n]} {sample.rows.get(n, 0):,}" for n in NAMES)
    print(f"day {sample.days:.2f}: {rows}, {sample.size_bytes / 1e6:.1f} MB", file=sys.stderr)


async def run(arguments: argparse.Namespace) -> None:
    counts = LogCounts()
    logging.getLogger().addHandler(counts)
    logging.getLogger().setLevel(logging.WARNING)
    async with database(arguments.backend) as url:
        settings = bench_settings(url)
        if arguments.retention_days is not None:
            settings = shortened(settings, arguments.retention_days)
        if arguments.retention_runs is not None:
            settings = settings.model_copy(update={"retention_runs": arguments.retention_runs})
        windows = retention_windows(settings, arguments.step)
        started = time.perf_counter()
        samples = await soak(
            settings,
            days=arguments.days,
            step=arguments.step,
            copies=arguments.copies,
            progress=_progress,
        )
        took = time.perf_counter() - started
    endpoints = sum(
        len(job["endpoints"]) for job in yaml.safe_load(example_jobs(arguments.copies))["jobs"]
    )
    print(
        f"{arguments.days:g} simulated days in {took:.0f} s on {arguments.backend}, "
        f"{endpoints} endpoints, a step of {arguments.step:g} s"
    )
    report(samples, windows)
    print(
        "log records: "
        + (", ".join(f"{n} {level}" for level, n in sorted(counts.levels.items())) or "none")
    )
    if counts.first_error:
        print(f"first error: {counts.first_error}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=float, default=30, help="simulated days")
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument(
        "--step",
        type=float,
        default=STEP,
        help="simulated seconds the clock moves at a time",
    )
    parser.add_argument(
        "--copies", type=int, default=1, help="copies of the example jobs (15 endpoints each)"
    )
    parser.add_argument(
        "--retention-days",
        type=float,
        default=None,
        help="every time-based retention window this long (default: the settings')",
    )
    parser.add_argument(
        "--retention-runs",
        type=int,
        default=None,
        help="runs kept per endpoint (default: the settings'); at one run per step, they "
        "fill in this many steps",
    )
    arguments = parser.parse_args(argv)
    command = "python -m bench.soak " + " ".join(
        f"--{name.replace('_', '-')} {value:g}"
        if isinstance(value, float)
        else f"--{name.replace('_', '-')} {value}"
        for name, value in vars(arguments).items()
        if value is not None
    )
    print_header(command)
    asyncio.run(run(arguments))


if __name__ == "__main__":
    main()
