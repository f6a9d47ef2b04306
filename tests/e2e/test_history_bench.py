"""`bench/history.py` end to end at a toy size: it seeds by COPY, grows the database from one
size to the next, times every read and claim, and prints both tables with the ratio row. Only
that it runs and says so is checked, never a timing."""

from __future__ import annotations

import asyncpg
import pytest

import bench.history
from bench.history import grow, parse, report
from cronpilot.adapters.wake import asyncpg_dsn


async def test_the_history_bench_grows_the_history_and_prints_its_tables(
    postgres_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bench.history, "COPY_CHUNK", 700)
    args = parse(
        [
            "--sizes",
            "3000",
            "1000",
            "--endpoints",
            "200",
            "--days",
            "3",
            "--repeat",
            "2",
            "--unbounded",
        ]
    )

    steps = await grow(postgres_url, args)

    assert [s.size for s in steps] == [1000, 3000]
    assert all(len(times) == 2 for s in steps for times in s.times.values())
    connection = await asyncpg.connect(asyncpg_dsn(postgres_url))
    try:
        kept = await connection.fetchval("SELECT count(*) FROM runs")
    finally:
        await connection.close()
    assert kept == 3000 - steps[-1].dropped_rows
    # The oldest day of three held about a third of the runs, in a partition of its own beside
    # the other days', today's, tomorrow's (at least) and DEFAULT.
    assert all(s.dropped_rows > s.size / 6 and s.partitions >= 6 for s in steps), steps
    report(steps, args)
    out = capsys.readouterr().out
    assert "| 3k / 1k |" in out, out
    assert "claim 100" in out and "latest of 100" in out, out
    assert "get_run, unbounded" in out, out
