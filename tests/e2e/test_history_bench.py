"""`bench/history.py` end to end at a toy size: it seeds by COPY, grows the database from one
size to the next, times every read and claim, and prints both tables with the ratio row. Only
that it runs and says so is checked, never a timing."""

from __future__ import annotations

import pytest

from bench.history import grow, parse, report


async def test_the_history_bench_grows_the_history_and_prints_its_tables(
    postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = parse(["--sizes", "3000", "1000", "--endpoints", "200", "--days", "3", "--repeat", "2"])

    steps = await grow(postgres_url, args)

    assert [s.size for s in steps] == [1000, 3000]
    assert all(len(times) == 2 for s in steps for times in s.times.values())
    report(steps, args)
    out = capsys.readouterr().out
    assert "| 3k / 1k |" in out, out
    assert "claim 100" in out and "latest of 100" in out, out
