"""`apply` refusing a bad condition (`run_if`, `success_when`) in one line that names file, job,
endpoint, field and the position in the expression; exit 2, nothing written."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e.conftest import Cli
from tests.e2e.test_admin_cli import one_error_line, write_jobs
from tests.e2e.test_graph_cli import _record_fetches

PIPELINE = """\
jobs:
  - name: etl
    endpoints:
      - name: fetch
        url: http://127.0.0.1:9/fetch
        interval: 30s
        success_when: body.records >= 0
      - name: transform
        url: http://127.0.0.1:9/transform
        depends_on: [fetch]
        run_if: fetch.body.records > 0
"""
FETCH = "        success_when: body.records >= 0\n"
TRANSFORM = "        run_if: fetch.body.records > 0\n"
WHERE = "job 'etl' endpoint 'transform' field 'run_if'"


@pytest.fixture
def etl(cli_for: Callable[..., Cli], sqlite_url: str, tmp_path: Path) -> Cli:
    """The pipeline applied, three fetches recorded and their schema learnt: fields
    batch_id, note, records."""
    cli = cli_for(sqlite_url, CRONPILOT_ALLOWED_NETWORKS="127.0.0.1/32")
    cli("apply", "-f", write_jobs(tmp_path, PIPELINE))
    key = cli.secret_key()
    asyncio.run(_record_fetches(sqlite_url, key))
    cli("schema", "backfill", "etl/fetch")
    return cli


def test_apply_refuses_a_bad_condition_and_writes_nothing(etl: Cli, tmp_path: Path) -> None:
    cases = [
        (
            TRANSFORM,
            "        run_if: fetch.body.records >\n",
            f"{WHERE}: at column 21: Syntax error: mismatched input '<EOF>'",
        ),
        (
            TRANSFORM,
            "        run_if: fetch.body.batch_id > 3\n",
            f"{WHERE}: at column 21: found no matching overload for '_>_' applied to "
            "'(string, int)'",
        ),
        (
            TRANSFORM,
            "        run_if: fetch.body.record > 0\n",
            f"{WHERE}: at column 12: 'fetch' has answered no field 'record' in its response "
            "(its fields: batch_id, note, records)",
        ),
        (
            TRANSFORM,
            "        run_if: " + " || ".join(["fetch.body.records > 0"] * 50) + "\n",
            f"{WHERE}: at column 1001: 1,296 characters, over the limit of 1,000",
        ),
        (
            FETCH,
            FETCH + "        run_if: fetch.body.records > 0\n",
            "job 'etl' endpoint 'fetch' field 'run_if': applies to an endpoint with depends_on "
            "only",
        ),
        (
            FETCH,
            "        success_when: body.batch_id == 1\n",
            "job 'etl' endpoint 'fetch' field 'success_when': at column 15: found no matching "
            "overload for '_==_' applied to '(string, int)'",
        ),
    ]
    for number, (line, bad, message) in enumerate(cases):
        path = write_jobs(tmp_path, PIPELINE.replace(line, bad), f"bad{number}.yaml")

        refused = etl("apply", "-f", path, expect=2)

        assert one_error_line(refused.stderr) == f"error: {path}: {message}"
    transform = etl.json("endpoints", "show", "etl/transform")
    fetch = etl.json("endpoints", "show", "etl/fetch")
    assert (transform["run_if"], fetch["run_if"]) == ("fetch.body.records > 0", None)
    assert fetch["success_when"] == "body.records >= 0"
    assert "unchanged" in etl("apply", "-f", write_jobs(tmp_path, PIPELINE), "--dry-run").stdout
