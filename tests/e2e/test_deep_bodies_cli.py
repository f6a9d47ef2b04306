"""`cronpilot runs show` of a run whose stored body nests 900 levels, as a process: JSON, YAML
and the table, each whole, where a walk that calls itself per level ran out of stack."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from cronpilot.adapters.crypto import FernetCipher
from cronpilot.adapters.jsonvalue import dump_json
from cronpilot.adapters.sql import open_sql_store
from cronpilot.domain.model import Response
from tests.contract.builders import run_once
from tests.e2e.conftest import Cli
from tests.support.deep_json import nested, store_body

DEPTH = 900
JOBS = """\
jobs:
  - name: shop
    endpoints:
      - name: orders
        url: https://93.184.216.34/orders
        interval: 30s
"""


async def _deep_run(database_url: str, key: str) -> str:
    store = await open_sql_store(database_url, FernetCipher(key))
    try:
        endpoint = await store.catalog.get_endpoint("shop/orders")
        assert endpoint.next_run_at is not None
        run = await run_once(store, endpoint.next_run_at, Response(status_code=200, body={}))
        await store_body(store, run.id, dump_json(nested(DEPTH)))
        return run.id
    finally:
        await store.close()


@pytest.fixture
def deep(cli_for: Callable[..., Cli], sqlite_url: str, tmp_path: Path) -> tuple[Cli, str]:
    cli = cli_for(sqlite_url)
    (tmp_path / "jobs.yaml").write_text(JOBS, encoding="utf-8")
    cli("apply", "-f", str(tmp_path / "jobs.yaml"))
    key = cli.secret_key()
    return cli, asyncio.run(_deep_run(sqlite_url, key))


@pytest.mark.parametrize("output", ["json", "yaml"])
def test_runs_show_writes_a_deep_body_for_scripts(deep: tuple[Cli, str], output: str) -> None:
    cli, run_id = deep

    shown = cli("runs", "show", run_id, "--output", output)

    assert shown.stderr == ""
    assert shown.stdout.count('"next": ') == DEPTH // 2
    # Floats cut as everywhere else, however deep (`0.30000000000000004` in the store).
    assert '"leaf": 0.3\n' in shown.stdout
    assert f'"id": "{run_id}"' in shown.stdout


def test_runs_show_prints_a_deep_body_for_people(deep: tuple[Cli, str]) -> None:
    cli, run_id = deep

    shown = cli("runs", "show", run_id)

    assert shown.stderr == ""
    assert run_id in shown.stdout
    # Rich folds the lines wider than the terminal: the body is there to its last bracket.
    assert shown.stdout.count("\n") > DEPTH
    assert shown.stdout.endswith("  ]\n}\n")
