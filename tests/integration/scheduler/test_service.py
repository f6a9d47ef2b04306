"""The scheduler as the composition root wires it for `cronpilot scheduler` and the demo."""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path

from cronpilot.adapters.database_url import sqlite_file
from cronpilot.adapters.processes import serve_scheduler, settle_worker_heap
from cronpilot.adapters.settings import load_settings
from cronpilot.adapters.sql import open_sql_store
from cronpilot.adapters.wake import wake_folder
from cronpilot.domain.model import RunStatus
from cronpilot.domain.ports import SecretCipher
from tests.integration.scheduler.builders import DEADLINE, declare, runs_of, spec
from tests.integration.scheduler.endpoint_server import EndpointServer
from tests.support.clock import FakeClock


async def test_serve_scheduler_runs_due_endpoints_and_closes_what_it_opened(
    sqlite_url: str,
    cipher: SecretCipher,
    tmp_path: Path,
    clock: FakeClock,
    server: EndpointServer,
) -> None:
    settings = load_settings(
        database_url=sqlite_url,
        allowed_networks=["127.0.0.1/32"],
        worker_id="served",
        secret_key_file=tmp_path / "secret.key",
        max_sleep_seconds=3600,
    )
    database = sqlite_file(sqlite_url)
    assert database is not None
    wake_sockets = wake_folder(database)
    store = await open_sql_store(sqlite_url, cipher)
    try:
        await declare(store, clock.now(), spec(server, "ok", "a"))
        stop = asyncio.Event()
        serving = asyncio.create_task(serve_scheduler(settings, store, clock, stop))
        async with asyncio.timeout(DEADLINE):
            await server.until_calls("a")
            # It listens for wake-ups from other processes before it claims anything.
            assert len(list(wake_sockets.glob("*.sock"))) == 1
            stop.set()
            await serving

        [run] = await runs_of(store, "a")
        assert (run.status, run.worker_id) == (RunStatus.SUCCESS, "served")
        assert list(wake_sockets.glob("*.sock")) == []
    finally:
        await store.close()


def test_a_settled_worker_heap_is_out_of_the_collectors_way() -> None:
    frozen_before = gc.get_freeze_count()
    try:
        settle_worker_heap()
        assert gc.get_freeze_count() > frozen_before
    finally:
        # Give this test process its objects back: it is not a worker.
        gc.unfreeze()
