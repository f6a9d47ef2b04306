"""`cronpilot doctor` as an operator runs it: a sound deployment passes every line and exits 0;
one behind on migrations, with its LLM on a closed port, fails naming what to fix."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import sqlalchemy
from cryptography.fernet import Fernet
from sqlalchemy.ext.asyncio import create_async_engine

from cronpilot.adapters.crypto import FernetCipher
from cronpilot.adapters.doctor import skew_check
from cronpilot.adapters.sql import open_sql_store
from cronpilot.domain.runs.workers import WorkerInfo
from tests.e2e.conftest import Cli
from tests.support.fake_openai_server import FakeOpenAI

OLDER_REVISION = "0020"


async def _worker_alive(url: str, key: str) -> None:
    store = await open_sql_store(url, FernetCipher(key))
    try:
        now = datetime.now(UTC)
        await store.workers.beat(WorkerInfo("w1", "box-1", 42, "0.1.0", now, now))
    finally:
        await store.close()


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_a_sound_deployment_passes_every_line(
    sql_url: str, cli_for: Callable[..., Cli]
) -> None:
    key = Fernet.generate_key().decode()
    await _worker_alive(sql_url, key)
    without_llm = cli_for(sql_url, CRONPILOT_SECRET_KEY=key).json("doctor")
    assert [c["check"] for c in without_llm] == [
        "database",
        "migrations",
        "secret key",
        "allowed networks",
        "clock skew",
        "workers",
    ]
    assert all(c["ok"] for c in without_llm), without_llm
    async with FakeOpenAI([]) as llm:
        cli = cli_for(
            sql_url,
            CRONPILOT_SECRET_KEY=key,
            CRONPILOT_LLM_BASE_URL=llm.base_url,
            CRONPILOT_LLM_MODEL="fake-model",
            CRONPILOT_ALLOWED_NETWORKS="10.0.0.0/8",
        )
        shown = (await asyncio.to_thread(cli, "doctor")).stdout
    lines = {line.split()[0]: line for line in shown.splitlines()[1:] if line.strip()}
    assert "FAIL" not in shown
    assert "answers and offers fake-model" in lines["llm"]
    assert "10.0.0.0/8" in shown


async def test_a_deployment_behind_with_its_llm_unreachable_fails_naming_each_fix(
    sqlite_url: str, cli_for: Callable[..., Cli]
) -> None:
    engine = create_async_engine(sqlite_url)
    async with engine.begin() as conn:
        await conn.execute(
            sqlalchemy.text("UPDATE alembic_version SET version_num = :old"),
            {"old": OLDER_REVISION},
        )
    await engine.dispose()
    cli = cli_for(
        sqlite_url,
        CRONPILOT_SECRET_KEY="not-a-key",
        CRONPILOT_LLM_BASE_URL=f"http://127.0.0.1:{_closed_port()}/v1",
        CRONPILOT_ALLOWED_NETWORKS="0.0.0.0/0",
    )
    failed = cli("doctor", "--json", expect=4)
    verdicts = {c["check"]: (c["ok"], c["detail"]) for c in json.loads(failed.stdout)}
    assert verdicts["database"] == (True, "reachable")
    ok, detail = verdicts["migrations"]
    assert not ok
    assert f"at {OLDER_REVISION}" in detail
    assert "cronpilot db upgrade" in detail
    assert verdicts["secret key"] == (
        False,
        "CRONPILOT_SECRET_KEY is not a Fernet key (32 url-safe base64 bytes)",
    )
    assert not verdicts["allowed networks"][0]
    assert "every address" in verdicts["allowed networks"][1]
    assert not verdicts["workers"][0]
    assert verdicts["llm"] == (
        False,
        "could not connect to the LLM server: check CRONPILOT_LLM_BASE_URL",
    )
    assert "not-a-key" not in failed.stdout + failed.stderr


def test_a_clock_too_far_from_the_databases_is_a_failure() -> None:
    assert skew_check(timedelta(seconds=0.3), trip=0.2).ok
    late = skew_check(timedelta(seconds=-5), trip=0.2)
    assert not late.ok
    assert "NTP" in late.detail
