"""Tokens and the audit log end to end: `cronpilot tokens …` and `cronpilot audit list` as
processes against SQLite (PostgreSQL shares the store's contract)."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from cronpilot.adapters.sql import open_sql_store
from cronpilot.domain.access.access import Principal, Scope
from cronpilot.usecases.access import authenticate
from tests.e2e.conftest import Cli
from tests.e2e.test_admin_cli import one_error_line, write_jobs

SECRET_LINE = re.compile(r"^cp_[A-Za-z0-9_-]{43}$", re.MULTILINE)


@pytest.fixture
def cli(cli_for: Callable[..., Cli], sqlite_url: str) -> Cli:
    return cli_for(
        sqlite_url,
        SHOP_TOKEN="tok-e2e",
        CRONPILOT_ALLOWED_NETWORKS="127.0.0.1/32",
        LOGNAME="ann",
    )


async def _authenticate(database_url: str, secret: str) -> Principal | None:
    store = await open_sql_store(database_url)
    try:
        return await authenticate(store, secret, datetime.now(UTC))
    finally:
        await store.close()


def test_a_token_is_shown_once_opens_the_api_and_is_refused_once_revoked(
    cli: Cli, sqlite_url: str
) -> None:
    created = cli("tokens", "create", "--name", "ci", "--scope", "write")
    [secret] = SECRET_LINE.findall(created.stdout)
    listed = cli("tokens", "list", "--json")
    again = cli("tokens", "create", "--name", "ci", "--scope", "read", expect=2)

    assert "will not be shown again" in created.stdout
    assert created.stderr == ""
    assert asyncio.run(_authenticate(sqlite_url, secret)) == Principal("token:ci", Scope.WRITE)
    [shown] = listed_tokens = json.loads(listed.stdout)
    assert (shown["name"], shown["scope"], shown["revoked_at"]) == ("ci", "write", None)
    assert shown["created_by"].startswith("cli:ann@")
    assert secret not in listed.stdout
    assert "hash" not in str(listed_tokens)
    assert "taken by a live token" in one_error_line(again.stderr)

    revoked = cli("tokens", "revoke", "ci")
    gone = cli("tokens", "revoke", "ci", expect=1)

    assert revoked.stdout.strip() == "revoked token ci (scope write)"
    assert one_error_line(gone.stderr) == "error: no live token 'ci'"
    assert asyncio.run(_authenticate(sqlite_url, secret)) is None
    assert cli.json("tokens", "list") == []
    assert [t["revoked_by"][:8] for t in cli.json("tokens", "list", "--all")] == ["cli:ann@"]


def test_tokens_create_json_gives_the_secret_to_scripts(cli: Cli, sqlite_url: str) -> None:
    done = cli("tokens", "create", "--name", "grafana", "--scope", "read", "--json")
    created = json.loads(done.stdout)

    assert SECRET_LINE.fullmatch(created["secret"])
    assert "will not be shown again" in done.stderr
    assert asyncio.run(_authenticate(sqlite_url, created["secret"])) == Principal(
        "token:grafana", Scope.READ
    )
    bad = cli("tokens", "create", "--name", "grafana bot", "--scope", "read", expect=2)
    assert "is not 1 to 64 letters" in one_error_line(bad.stderr)
    wrong_scope = cli("tokens", "create", "--name", "x", "--scope", "root", expect=2)
    assert "root" in one_error_line(wrong_scope.stderr)


def test_every_write_from_the_cli_is_in_the_audit_log(cli: Cli, tmp_path: Path) -> None:
    cli("apply", "-f", write_jobs(tmp_path))
    cli("pause", "shop/orders", "--reason", "maintenance")
    cli("run", "shop/nightly")
    cli("tokens", "create", "--name", "ci", "--scope", "admin")

    entries = cli.json("audit", "list")
    shown = cli.json("endpoints", "show", "shop/orders")
    pauses = cli.json("audit", "list", "--action", "pause", "--limit", "5")
    table = cli("audit", "list", "--limit", "2").stdout
    bad = cli("audit", "list", "--action", "drop", expect=2)

    assert [(e["action"], e["target"]) for e in entries] == [
        ("token_create", "ci"),
        ("run_now", "shop/nightly"),
        ("pause", "shop/orders"),
        ("apply", str(tmp_path / "jobs.yaml")),
    ]
    assert {e["actor"] for e in entries} == {entries[0]["actor"]}
    assert entries[0]["actor"].startswith("cli:ann@")
    assert shown["paused"]["by"] == entries[0]["actor"]
    assert [e["id"] for e in pauses] == [entries[2]["id"]]
    assert "token_create" in table
    assert "run_now" in table
    assert "apply" not in table
    assert "drop" in one_error_line(bad.stderr)
    assert cli.json("audit", "list", "--actor", "token:ci") == []
