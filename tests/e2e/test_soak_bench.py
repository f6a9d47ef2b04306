"""The soak benchmark's core (`bench/soak.py`), two simulated days of the example jobs with the
planner on and an admin who rejects everything, with half-day retention windows: every table
that grows stops growing once its window has passed, and so does the database file."""

from __future__ import annotations

import pytest

from bench.soak import STEP, judge, report, retention_windows, shortened, soak
from tests.support.settings import settings_for_tests

LOOPBACK = ["127.0.0.1/32"]
HOURS = 3600.0


@pytest.mark.slow
@pytest.mark.timeout(600)
async def test_two_days_left_alone_stay_flat_past_short_retention_windows(
    sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = shortened(
        settings_for_tests(database_url=sqlite_url, allowed_networks=LOOPBACK, worker_id="soak"),
        days=0.5,
        runs=10,
    )
    windows = retention_windows(settings, STEP)

    samples = await soak(settings, days=2, step=STEP, copies=1, every=3 * HOURS)

    report(samples, windows)
    table = capsys.readouterr().out
    print(table)
    verdicts = judge(samples, windows)
    assert [v.column for v in verdicts if v.flat is None] == [], table
    growing = {v.column: (v.start, v.end) for v in verdicts if v.flat is False}
    assert growing == {}, f"still growing (peak after the window, at the end): {growing}\n{table}"
    assert {"runs", "analysis_sessions"} <= {v.column for v in verdicts}, table
