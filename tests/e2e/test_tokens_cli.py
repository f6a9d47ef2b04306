"""Token hygiene end to end: `cronpilot tokens create NAME --expires --jobs`, `tokens rotate
--grace` and `tokens list` as processes against SQLite (the store's contract covers
PostgreSQL), and bad input as one line."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cronpilot.adapters.sql import open_sql_store
from cronpilot.domain.access.access import Principal, Scope
from cronpilot.domain.errors import TokenExpired
from cronpilot.usecases.access import authenticate
from tests.e2e.conftest import Cli
from tests.e2e.test_access_cli import SECRET_LINE
from tests.e2e.test_admin_cli import one_error_line, write_jobs


@pytest.fixture
def cli(cli_for: Callable[..., Cli], sqlite_url: str) -> Cli:
    return cli_for(
        sqlite_url,
        SHOP_TOKEN="tok-e2e",
        CRONPILOT_ALLOWED_NETWORKS="127.0.0.1/32",
        LOGNAME="ann",
    )


async def _authenticate(database_url: str, secret: str, at: datetime) -> Principal | None:
    store = await open_sql_store(database_url)
    try:
        return await authenticate(store, secret, at)
    finally:
        await store.close()


def test_an_expiring_job_limited_token_is_made_listed_and_rotated(
    cli: Cli, sqlite_url: str, tmp_path: Path
) -> None:
    cli("apply", "-f", write_jobs(tmp_path))
    before = datetime.now(UTC)
    created = cli("tokens", "create", "etl", "--expires", "90d", "--jobs", "shop")
    [secret] = SECRET_LINE.findall(created.stdout)
    [listed] = cli.json("tokens", "list")
    table = cli("tokens", "list").stdout
    rotated = cli("tokens", "rotate", "etl", "--grace", "1h")
    [new] = SECRET_LINE.findall(rotated.stdout)

    assert created.stdout.startswith("created token etl (scope read, jobs shop, expires in 90d")
    expires = datetime.fromisoformat(listed["expires_at"])
    assert before + timedelta(days=90) <= expires <= datetime.now(UTC) + timedelta(days=90)
    assert (listed["jobs"], listed["scope"], listed["last_used_at"]) == (["shop"], "read", None)
    for heading in ("Jobs", "Expires", "Last used"):
        assert heading in table
    assert rotated.stdout.startswith("rotated token etl: the old secret works until ")
    assert new != secret and secret not in rotated.stdout
    now = datetime.now(UTC)
    etl = Principal("token:etl", Scope.READ, frozenset({"shop"}))
    assert asyncio.run(_authenticate(sqlite_url, secret, now)) == etl
    assert asyncio.run(_authenticate(sqlite_url, new, now)) == etl
    with pytest.raises(TokenExpired, match="secret of token 'etl' stopped working"):
        asyncio.run(_authenticate(sqlite_url, secret, now + timedelta(hours=2)))


def test_bad_token_input_is_one_line_and_writes_nothing(cli: Cli, tmp_path: Path) -> None:
    cli("apply", "-f", write_jobs(tmp_path))
    past = cli("tokens", "create", "ci", "--expires", "2020-01-01T00:00:00Z", expect=2)
    unknown_job = cli("tokens", "create", "ci", "--jobs", "shop,nope", expect=2)
    not_a_time = cli("tokens", "create", "ci", "--expires", "soon", expect=2)
    no_name = cli("tokens", "create", expect=2)
    unknown = cli("tokens", "rotate", "nobody", expect=1)
    bad_grace = cli("tokens", "rotate", "nobody", "--grace", "a while", expect=2)

    assert one_error_line(past.stderr) == (
        "error: token 'ci': expiry 2020-01-01 00:00:00 UTC is not in the future"
    )
    assert one_error_line(unknown_job.stderr) == (
        "error: token 'ci': cannot be limited to no job 'nope'"
    )
    assert "'soon' is neither a duration" in one_error_line(not_a_time.stderr)
    assert "give the token a name" in one_error_line(no_name.stderr)
    assert one_error_line(unknown.stderr) == "error: no live token 'nobody'"
    assert "'a while' is not a duration" in one_error_line(bad_grace.stderr)
    assert cli.json("tokens", "list", "--all") == []
