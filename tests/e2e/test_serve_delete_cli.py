"""`cronpilot serve` refusing to expose tokens in clear, and `cronpilot delete`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e.conftest import Cli

JOBS = """
jobs:
  - name: shop
    endpoints:
      - name: stock
        url: https://example.com/stock
        interval: 60s
      - name: prices
        url: https://example.com/prices
        depends_on: [stock]
  - name: other
    endpoints:
      - name: keep
        url: https://example.com/keep
        interval: 60s
"""


@pytest.fixture
def cli(cli_for: Callable[..., Cli], sqlite_url: str) -> Cli:
    return cli_for(sqlite_url)


def _error(stderr: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    return lines[0]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--host", "0.0.0.0"], "--insecure-http"),
        (["--host", "192.0.2.1", "--tls-cert", "cert.pem"], "both or neither"),
    ],
)
def test_serve_refuses_plain_http_off_loopback(cli: Cli, args: list[str], says: str) -> None:
    assert says in _error(cli("serve", *args, expect=2).stderr)


def test_delete_an_endpoint_a_job_and_what_is_refused(cli: Cli, tmp_path: Path) -> None:
    jobs = tmp_path / "jobs.yaml"
    jobs.write_text(JOBS, encoding="utf-8")
    cli("apply", "-f", str(jobs))

    refused = _error(cli("delete", "shop/stock", "--yes", expect=2).stderr)
    assert "shop/prices depend on it" in refused
    assert _error(cli("delete", "shop/prices", expect=2).stderr) == (
        "error: delete shop/prices: no terminal to confirm on: pass --yes (or --dry-run to see "
        "what would go)"
    )
    assert cli("delete", "shop", "--dry-run").stdout == (
        "would delete job shop\nwould delete shop/prices\nwould delete shop/stock\n"
    )
    assert cli("delete", "shop/prices", "--yes").stdout == "deleted shop/prices\n"
    assert cli.json("delete", "shop", "-y") == {"job": "shop", "endpoints": ["shop/stock"]}
    assert [e["ref"] for e in cli.json("endpoints", "list")] == ["other/keep"]
    assert _error(cli("delete", "shop", "--yes", expect=1).stderr) == "error: no job 'shop'"
    assert _error(cli("delete", "other/nope", expect=1).stderr) == "error: no endpoint 'other/nope'"
