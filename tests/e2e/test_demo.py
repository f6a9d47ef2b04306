"""`cronpilot demo` as a real process: it runs, records a run of every demo endpoint, summarises
what the database holds and leaves nothing behind.

The demo runs 14 s rather than 5: the governor clamps even an endpoint's first run to
`now + min_interval`, and the example's slowest first run (the investigator, min 10 s) must fall
inside the demo with a margin for a loaded machine. Not much longer: the simulator's billing
period lasts the demo, and billing/usage's second read (10 s after its first) must come after the
projection crosses the budget, two thirds of the way in (10/14 > 2/3), for cleanup to be asked.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE_PATHS = [
    "/fraud/score",
    "/fraud/investigate",
    "/etl/fetch",
    "/etl/transform",
    "/etl/load",
    "/health/eu",
    "/health/us",
    "/health/ap",
    "/failover/eu",
    "/failover/us",
    "/failover/ap",
    "/queue/depth",
    "/queue/process",
    "/billing/usage",
    "/billing/cleanup",
]
DURATION = 14
SHOWCASE_PATHS = [
    "/status/page",
    "/reports/export",
    "/reports/slow",
    "/reports/daily",
    "/flaky/retried",
    "/flaky/limited",
    "/flaky/alerting",
]
SUMMARY_LINE = re.compile(
    r"^summary (?P<ref>\S+/\S+) (?P<path>/\S*): runs=(?P<runs>\d+) ok=(?P<ok>\d+) "
    r"failed=(?P<failed>\d+) skipped=(?P<skipped>\d+) bodies=(?P<bodies>\d+) "
    r"markers=(?P<markers>.*) "
    r"errors=(?P<errors>.*) schedule=(?P<schedule>\S+)$"
)


@pytest.mark.slow
def test_demo_runs_every_endpoint_and_summarises_from_the_database(tmp_path: Path) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {name: value for name, value in os.environ.items() if not name.startswith("CRONPILOT_")}
    env.update(TMPDIR=str(scratch), HOME=str(tmp_path))

    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "cronpilot.adapters.cli.main",
            "demo",
            "--duration",
            str(DURATION),
            "--no-live",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )

    assert done.returncode == 0, done.stderr
    # Nothing the demo does may crash quietly behind a green summary (a worker's log).
    assert "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
    lines = {
        match["path"]: match
        for match in map(SUMMARY_LINE.match, done.stdout.splitlines())
        if match is not None
    }
    assert sorted(lines) == sorted(EXAMPLE_PATHS + SHOWCASE_PATHS), done.stdout
    for path, line in lines.items():
        runs, ok, failed = int(line["runs"]), int(line["ok"]), int(line["failed"])
        assert runs >= 1, f"{path} never ran:\n{done.stdout}"
        assert ok + failed + int(line["skipped"]) == runs, line.group(0)
    assert "not_json" in lines["/status/page"]["markers"]
    assert "too_large" in lines["/reports/export"]["markers"]
    assert "timeout" in lines["/reports/slow"]["errors"]
    assert int(lines["/fraud/score"]["bodies"]) >= 1
    # The ETL DAG: fetch finds the same batch every other time, so transform (only_if_changed)
    # is skipped with its reason, and load answers with the batch transform passed it.
    assert int(lines["/etl/transform"]["skipped"]) >= 1, done.stdout
    assert int(lines["/etl/load"]["ok"]) >= 1, done.stdout
    assert "dag etl/transform: " in done.stdout
    assert "only_if_changed: no upstream response changed" in done.stdout
    assert re.search(r'^dag etl/load: .*"batch_id": "batch-\d+"', done.stdout, re.MULTILINE)
    # Billing: cleanup is asked for only once the projection passes the budget (its run_if,
    # about 40 s into the simulator's period), then waits at its approval gate. The skips are
    # counted by reason, the values each read aside.
    assert re.search(
        r"^dag billing/cleanup: .*run_if 'usage.body.projected_usd > usage.body.budget_usd' "
        r"is false \d+;",
        done.stdout,
        re.M,
    )
    total_runs = sum(int(line["runs"]) for line in lines.values())
    assert re.search(rf"^total: {total_runs} runs on 22 endpoints", done.stdout, re.MULTILINE)
    # A failure retried within its slot, a Retry-After that moved a run, a run asked for by
    # hand and an alert delivered to the simulator, each read back from the database.
    for shown in (
        r"^retried showcase/flaky: \d+ of \d+ runs needed a retry \(at most [23] attempts\)",
        r"^retry-after showcase/rate-limited: [1-9]\d* runs waited for the endpoint's Retry-After",
        r"^manual billing/usage: 1 run by hand; last: success 200$",
        r"^alert failing showcase/alerting: delivered \(\d+ attempts?\) to /hooks/alerts$",
        # billing/cleanup waits for an admin after each usage read: the webhook hears of it,
        # the demo approves it as `cronpilot approvals approve` does, and then it runs.
        r"^alert approval_pending billing/cleanup: delivered \(\d+ attempts?\) to /hooks/alerts$",
        r"^approval billing/cleanup [0-9a-f]{8}: waited \d+s, approved by cli:\S+ "
        r"\(as `cronpilot approvals approve [0-9a-f]{8}` does\)$",
    ):
        assert re.search(shown, done.stdout, re.MULTILINE), f"{shown}\n{done.stdout}"
    # The built-in planner called the report that never changes less, and said why.
    assert re.search(
        r"^planner showcase/daily-report: \d+ proposals \(\d+ applied\); last: every [\d.]+s "
        r"for .* applied: no change seen \(0 changes seen in \d+ calls\);",
        done.stdout,
        re.MULTILINE,
    ), done.stdout
    # The example jobs' rules fired, each shown with when, its value and what became of it.
    for shown in (
        r"^rule flash-sale/investigator 2 at \+\S+: true = true -> pause until \S+: applied$",
        r"^rule queue/processor 1 at \+\S+: depth.body.pending > 200 = true -> every 3s for "
        r"10m: applied$",
        r"^rule health/eu_failover 2 at \+\S+: true = true -> pause until \S+: applied$",
    ):
        assert re.search(shown, done.stdout, re.MULTILINE), f"{shown}\n{done.stdout}"
    # Damped (decision 0032): within the demo's seconds, a rule that holds again is held back
    # by the dwell of the change a rule made at the start.
    held = re.findall(
        r"^rule (\S+) (\d) at \+\S+: .* = true -> held back by dwell: the last change "
        r"\(proposal [0-9a-f]+, applied\) dwells 120s, until \S+$",
        done.stdout,
        re.MULTILINE,
    )
    assert held, done.stdout
    assert list(scratch.iterdir()) == [], "the demo left its temporary database behind"
