"""Quiet, bounded records through the CLI (issue 21, item 3): every list narrows to a window
with `--since` / `--until` (an ISO time or a duration back from now), a bad one is one line
and exit 2, and `endpoints show` says when a planner last looked."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from cronpilot.adapters.crypto import FernetCipher
from cronpilot.adapters.sql import open_sql_store
from tests.e2e.conftest import Cli
from tests.support.records import REF, Aged, two_of_each

LISTS = {
    "sessions": ("sessions", "list"),
    "proposals": ("proposals", "list"),
    "notifications": ("notifications", "list"),
    "audit": ("audit", "list"),
    "runs": ("runs", "list", REF),
}


async def _seed(database_url: str, key: str, now: datetime) -> dict[str, Aged]:
    store = await open_sql_store(database_url, FernetCipher(key))
    try:
        return await two_of_each(store, now)
    finally:
        await store.close()


@pytest.fixture
def seeded(cli_for: Callable[..., Cli], sqlite_url: str) -> tuple[Cli, dict[str, Aged], datetime]:
    cli = cli_for(sqlite_url)
    key = cli.secret_key()
    now = datetime.now(UTC)
    return cli, asyncio.run(_seed(sqlite_url, key, now)), now


def _ids(cli: Cli, kind: str, *window: str) -> list[str]:
    return [row["id"] for row in cli.json(*LISTS[kind], *window)]


@pytest.mark.parametrize("kind", LISTS)
def test_a_list_narrows_to_a_window(
    seeded: tuple[Cli, dict[str, Aged], datetime], kind: str
) -> None:
    cli, aged, now = seeded
    made = aged[kind]
    between = (now - timedelta(hours=2)).isoformat()

    assert _ids(cli, kind) == [made.recent, made.old]
    assert _ids(cli, kind, "--since", "2h") == [made.recent]
    assert _ids(cli, kind, "--until", "2h") == [made.old]
    assert _ids(cli, kind, "--since", between) == [made.recent]
    assert _ids(cli, kind, "--since", "4h", "--until", between) == [made.old]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("sessions", "list", "--since", "yesterday"), "since 'yesterday' is neither an ISO"),
        (("audit", "list", "--until", "2030-02-30"), "until '2030-02-30' is neither an ISO"),
        (("runs", "list", REF, "--since", "1h", "--until", "2h"), "is not before until"),
        (("proposals", "list", "--since", "1e400d"), "since '1e400d' is neither"),
    ],
)
def test_a_bad_window_is_one_line_and_exit_2(
    seeded: tuple[Cli, dict[str, Aged], datetime], args: tuple[str, ...], message: str
) -> None:
    cli, _, _ = seeded
    failed = cli(*args, expect=2)
    [line] = failed.stderr.splitlines()
    assert line.startswith("error: ") and message in line, failed.stderr


def test_endpoints_show_says_when_a_planner_last_looked(
    seeded: tuple[Cli, dict[str, Aged], datetime],
) -> None:
    cli, _, now = seeded

    shown = cli.json("endpoints", "show", REF)
    text = cli("endpoints", "show", REF).stdout

    looked = datetime.fromisoformat(shown["last_analysed_at"])
    assert abs(looked - (now - timedelta(hours=1))) < timedelta(seconds=1)
    assert re.search(r"last looked at +1h[\ds]* ago", text), text
