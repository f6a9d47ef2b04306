"""Notification targets through the CLI: a target URL refused by the guard in one line, the
targets' secrets masked in `endpoints show` and a dry run, kept out of `export`, which applies
back unchanged once its variables are set."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from tests.e2e.conftest import Cli

SLACK = "http://127.0.0.1:9/services/T0/B0/sl4ck"
JOBS = f"""\
jobs:
  - name: shop
    notify:
      targets:
        - {{kind: slack, url: "{SLACK}", events: [failing, recovered]}}
        - {{kind: pagerduty, routing_key: R0UTE, url: "http://127.0.0.1:9/enqueue"}}
        - {{kind: email, host: 127.0.0.1, port: 2525, from: cron@example.com,
            to: [ops@example.com], starttls: true, username: cron, password: p4ss}}
    endpoints:
      - name: orders
        url: http://127.0.0.1:9/orders
        interval: 30s
"""
SECRETS = ("sl4ck", "R0UTE", "p4ss")
VARIABLES = {
    "SHOP_ORDERS_NOTIFY_TARGET_1_URL": SLACK,
    "SHOP_ORDERS_NOTIFY_TARGET_2_ROUTING_KEY": "R0UTE",
    "SHOP_ORDERS_NOTIFY_TARGET_3_PASSWORD": "p4ss",
}


@pytest.fixture
def cli(cli_for: Callable[..., Cli], sqlite_url: str) -> Cli:
    return cli_for(sqlite_url, CRONPILOT_ALLOWED_NETWORKS="127.0.0.1/32", COLUMNS="200")


def _write(directory: Path, text: str, name: str = "jobs.yaml") -> str:
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_a_target_url_the_guard_refuses_exits_2_in_one_line_without_its_secret(
    cli: Cli, tmp_path: Path
) -> None:
    jobs_file = _write(tmp_path, JOBS.replace(SLACK, "http://10.0.0.5/services/T0/B0/sl4ck"))

    failed = cli("apply", "-f", jobs_file, expect=2)

    assert failed.stderr.splitlines() == [
        f"error: {jobs_file}: job 'shop' field 'notify.targets[0].url': refused by the address "
        "guard: 10.0.0.5 is private; to call it, add 10.0.0.5/32 to CRONPILOT_ALLOWED_NETWORKS"
    ]
    assert cli.json("jobs", "list") == []


def test_target_secrets_are_masked_in_show_and_out_of_export_which_applies_back(
    cli: Cli, tmp_path: Path
) -> None:
    cli("apply", "-f", _write(tmp_path, JOBS))

    shown = cli.json("endpoints", "show", "shop/orders")
    table = cli("endpoints", "show", "shop/orders").stdout
    exported = cli("export").stdout
    exported_file = _write(tmp_path, exported, "exported.yaml")
    with_variables = replace(cli, env={**cli.env, **VARIABLES})
    dry = with_variables.json("apply", "-f", exported_file, "--dry-run")
    rekeyed = with_variables(
        "apply",
        "-f",
        _write(tmp_path, JOBS.replace("R0UTE", "N3WK3Y"), "rekeyed.yaml"),
        "--dry-run",
    ).stdout

    slack, pagerduty, email = shown["notify_targets"]
    assert slack == {
        "kind": "slack",
        "events": ["failing", "recovered"],
        "url": "http://127.0.0.1:9/****",
    }
    assert pagerduty["routing_key"] == "****"
    assert email["smtp"]["password"] == "****"
    assert "slack http://127.0.0.1:9/**** (failing, recovered)" in table
    assert "email smtp://127.0.0.1:2525 to ops@example.com (every event)" in table
    for secret in SECRETS:
        assert secret not in table + str(shown) + exported + rekeyed
    assert "url: ${SHOP_ORDERS_NOTIFY_TARGET_1_URL}" in exported
    assert [(c["ref"], c["outcome"]) for c in dry["changes"]] == [
        ("shop", "unchanged"),
        ("shop/orders", "unchanged"),
    ]
    assert "notify_targets[1].routing_key: changed (secret, not shown)" in rekeyed
