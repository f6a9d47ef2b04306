"""Response rules from the CLI alone: a bad rule is one line and exit 2 with nothing written,
`apply --dry-run` names the rule that changes, and `sessions show` prints what each rule
evaluated to and what it did — `cronpilot` as a process on SQLite."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from cronpilot.adapters.sql import open_sql_store
from tests.e2e.conftest import Cli
from tests.integration.planner.builders import answer

JOBS = """\
jobs:
  - name: queue
    planner_mode: auto
    endpoints:
      - {name: depth, url: "http://127.0.0.1:9/depth", interval: 5s, planner_mode: "off"}
      - name: processor
        url: http://127.0.0.1:9/process
        interval: 10s
        min_interval: 3s
        rules:
          - {when: 'depth.body.pending < 50', then: {interval: 1m}}
          - {when: 'depth.body.pending > 200', then: {interval: 3s}}
"""


@pytest.fixture
def queue(cli_for: Callable[..., Cli], sqlite_url: str, tmp_path: Path) -> Cli:
    return cli_for(sqlite_url, LOGNAME="ann", CRONPILOT_ALLOWED_NETWORKS="127.0.0.1/32")


def _write(cli: Cli, text: str) -> str:
    jobs = cli.home / "jobs.yaml"
    jobs.write_text(text, encoding="utf-8")
    return str(jobs)


@pytest.mark.parametrize(
    ("rule", "error"),
    [
        (
            "then: {interval: 3s}",
            "field 'rules[1].then': unknown action 'speedup'; the actions are interval, "
            "run_now, pause, resume, baseline",
        ),
        ("then: pause", "field 'rules[1].then': pause needs how long: then: {pause: {for: 10m}}"),
        (
            "when: 'depth.body.pending > 200'",
            "field 'rules[1].when': at column 21: Syntax error: extraneous input '>'",
        ),
    ],
)
def test_a_bad_rule_is_one_line_exit_2_and_nothing_written(
    queue: Cli, rule: str, error: str
) -> None:
    broken = {
        "then: {interval: 3s}": JOBS.replace("then: {interval: 3s}", "then: speedup"),
        "then: pause": JOBS.replace("then: {interval: 3s}", "then: pause"),
        "when: 'depth.body.pending > 200'": JOBS.replace(
            "'depth.body.pending > 200'", "'depth.body.pending >> 200'"
        ),
    }[rule]

    done = queue("apply", "-f", _write(queue, broken), expect=2)

    [line] = done.stderr.splitlines()
    assert line.startswith("error: ")
    assert "job 'queue' endpoint 'processor' " + error in line
    assert queue.json("jobs", "list") == []


async def test_dry_run_then_apply_then_see_the_rules_session(queue: Cli, sqlite_url: str) -> None:
    queue("apply", "-f", _write(queue, JOBS))
    edited = JOBS.replace("then: {interval: 3s}", "then: {interval: 4s}")

    dry = queue("apply", "-f", _write(queue, edited), "--dry-run").stdout

    assert "rules[1].then.interval_seconds" in dry
    assert "3" in dry and "4" in dry
    store = await open_sql_store(sqlite_url)
    try:
        await answer(store, "queue/depth", {"pending": 480})
    finally:
        await store.close()
    queue("planner", "run-once", "queue/processor")
    [session] = queue.json("sessions", "list", "--endpoint", "queue/processor")
    assert (session["planner"], session["status"]) == ("rules", "evaluated")

    shown = queue("sessions", "show", session["id"]).stdout
    viewed = queue.json("sessions", "show", session["id"])

    assert "depth.body.pending < 50" in shown
    assert "not_held" in shown
    assert "proposed" in shown
    assert [
        (e["rule"], e["value"], e["outcome"], e["detail"][:22]) for e in viewed["rule_evaluations"]
    ] == [
        (1, False, "not_held", "false (depth.body.pend"),
        (2, True, "proposed", "interval 3s: applied: "),
    ]
    [proposal] = queue.json("proposals", "list")
    assert proposal["reason"] == (
        "proposed by rule 2 of queue/processor: depth.body.pending > 200 = true"
    )


def test_endpoints_show_says_the_rules_and_whether_it_is_dangerous(queue: Cli) -> None:
    queue(
        "apply",
        "-f",
        _write(
            queue, JOBS.replace("min_interval: 3s", "min_interval: 3s\n        dangerous: true")
        ),
    )
    wide = Cli(queue.home, {**queue.env, "COLUMNS": "200"})

    shown = queue.json("endpoints", "show", "queue/processor")
    text = wide("endpoints", "show", "queue/processor").stdout
    depth = queue.json("endpoints", "show", "queue/depth")

    assert shown["dangerous"] is True
    assert [(rule["when"], rule["then"]["kind"]) for rule in shown["rules"]] == [
        ("depth.body.pending < 50", "interval"),
        ("depth.body.pending > 200", "interval"),
    ]
    assert [rule["then"]["interval_seconds"] for rule in shown["rules"]] == [60, 3]
    assert (depth["dangerous"], depth["rules"]) == (False, [])
    lines = dict(line.rstrip().split(maxsplit=1) for line in text.splitlines())
    assert lines["dangerous"] == "yes: a planner's run now or next time waits for review"
    assert lines["rules"] == (
        "1. when depth.body.pending < 50 then interval 60s; "
        "2. when depth.body.pending > 200 then interval 3s"
    )
