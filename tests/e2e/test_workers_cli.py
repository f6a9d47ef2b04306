"""`cronpilot workers list` without workers, and CRONPILOT_OTEL where OpenTelemetry cannot be
imported (a worker running with it is in tests/integration/test_scheduler_process.py)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from tests.e2e.conftest import Cli


def test_no_workers_is_an_empty_list_and_a_note(
    cli_for: Callable[..., Cli], sqlite_url: str
) -> None:
    cli = cli_for(sqlite_url)

    assert cli.json("workers", "list") == []
    done = cli("workers", "list")
    assert (done.stdout, done.stderr) == ("", "no workers heard from lately\n")


def test_otel_asked_for_but_not_importable_is_one_line_and_exit_2(
    cli_for: Callable[..., Cli], sqlite_url: str, tmp_path: Path
) -> None:
    # A package found before the installed one that fails to import, as a missing one would.
    shadow = tmp_path / "shadow" / "opentelemetry"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('No module named opentelemetry')\n")
    cli = cli_for(sqlite_url, CRONPILOT_OTEL="true", CRONPILOT_LOG_LEVEL="ERROR")
    env = {**cli.env, "PYTHONPATH": os.pathsep.join([str(shadow.parent), cli.env["PYTHONPATH"]])}

    done = Cli(cli.home, env)("scheduler", expect=2)

    assert done.stderr.splitlines() == [
        "error: CRONPILOT_OTEL: OpenTelemetry cannot be imported (No module named "
        "opentelemetry); pip install 'cronpilot[otel]'"
    ]
