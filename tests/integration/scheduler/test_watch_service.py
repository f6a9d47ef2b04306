"""The watch as the composition root wires it (`serve_scheduler`): a worker starting after days
with no worker alive tells the gap and the slot missed meanwhile before it runs that slot."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

from cronpilot.adapters.processes import serve_scheduler
from cronpilot.adapters.settings import load_settings
from cronpilot.adapters.sql import open_sql_store
from cronpilot.domain.alerts.alerts import AlertEvent
from cronpilot.domain.ports import SecretCipher
from cronpilot.domain.runs.workers import WorkerInfo
from tests.integration.scheduler.builders import DEADLINE, declare, runs_of, spec
from tests.integration.scheduler.endpoint_server import EndpointServer
from tests.support.clock import FakeClock

HOOK = "http://127.0.0.1:9/hook"
E = AlertEvent


async def test_a_worker_back_after_days_tells_the_gap_and_the_missed_slot_first(
    sqlite_url: str,
    cipher: SecretCipher,
    tmp_path: Path,
    clock: FakeClock,
    server: EndpointServer,
) -> None:
    settings = load_settings(
        database_url=sqlite_url,
        allowed_networks=["127.0.0.1/32"],
        worker_id="back",
        secret_key_file=tmp_path / "secret.key",
        max_sleep_seconds=3600,
    )
    gone_at = clock.now() - timedelta(days=2)
    store = await open_sql_store(sqlite_url, cipher)
    try:
        await declare(
            store, gone_at, spec(server, "ok", "a", notify=(HOOK,), missed_after_seconds=600)
        )
        await store.workers.beat(WorkerInfo("gone", "host", 1, "0", gone_at, gone_at))
        stop = asyncio.Event()
        serving = asyncio.create_task(serve_scheduler(settings, store, clock, stop))
        async with asyncio.timeout(DEADLINE):
            await server.until_calls("a")
            stop.set()
            await serving

        [run] = await runs_of(store, "a")
        told = await store.notifications.list_notifications()
        [missed] = await store.notifications.open_episodes(E.MISSED)
    finally:
        await store.close()

    assert sorted((n.event.value, n.payload["episode"]["kind"]) for n in told) == [
        ("missed", "missed"),
        ("no_workers", "no_workers"),
        ("recovered", "no_workers"),
    ]
    # Told before the worker's claim moved the slot on (its catch-up runs the latest slot).
    assert missed.started_at == gone_at
    assert run.slot_at > gone_at
    assert {n.created_at for n in told} == {clock.now()}
