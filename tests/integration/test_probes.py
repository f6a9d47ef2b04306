"""The probe server of a running worker over real HTTP on loopback: metrics that agree with the
database, readiness that follows the database (cut behind a TCP proxy of the test's own, never
by stopping the machine's server) and the migrations."""

from __future__ import annotations

import asyncio
import itertools
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack

import aiohttp
import pytest
from cryptography.fernet import Fernet
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import text
from sqlalchemy.engine import make_url

from cronpilot.adapters.bootstrap import open_store
from cronpilot.adapters.clock import SystemClock
from cronpilot.adapters.health import DATABASE_CHECK_REUSE_SECONDS, ReadinessProbe
from cronpilot.adapters.metrics import PrometheusTelemetry
from cronpilot.adapters.probes import Probes, start_probes
from cronpilot.adapters.processes import open_probes, serve_scheduler
from cronpilot.adapters.settings import Settings
from cronpilot.adapters.sql.engine import create_engine
from cronpilot.domain.model import Schedule
from cronpilot.domain.ports import Store
from tests.integration.scheduler.builders import declare, spec
from tests.integration.scheduler.endpoint_server import EndpointServer
from tests.support.proxy import CuttableProxy
from tests.support.settings import settings_for_tests

DEADLINE = 20.0
PG_PORT = 5432


def _settings(url: str) -> Settings:
    return settings_for_tests(
        database_url=url,
        allowed_networks=["127.0.0.0/8"],
        secret_key=Fernet.generate_key().decode(),
        metrics_port=0,
        worker_id="w1",
        claim_ahead_seconds=0.0,
    )


async def _get(port: int, path: str) -> tuple[int, str]:
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{port}{path}") as response,
    ):
        return response.status, await response.text()


def _samples(exposition: str, name: str) -> list[tuple[dict[str, str], float]]:
    return [
        (sample.labels, sample.value)
        for family in text_string_to_metric_families(exposition)
        for sample in family.samples
        if sample.name == name
    ]


async def _recorded_runs(store: Store) -> Counter[tuple[str, str]]:
    counts: Counter[tuple[str, str]] = Counter()
    for endpoint in await store.catalog.list_endpoints():
        for run in await store.runs.list_runs(endpoint.id, limit=1000):
            if run.status.finished:
                counts[(endpoint.name, run.status.value)] += 1
    return counts


async def test_metrics_scraped_from_a_running_worker_match_the_database(sqlite_url: str) -> None:
    settings = _settings(sqlite_url)
    clock = SystemClock()
    every_second = Schedule(interval_seconds=1)
    async with AsyncExitStack() as resources, EndpointServer() as server:
        probes = await open_probes(settings, ["scheduler"], clock, resources)
        assert probes is not None and probes.port is not None
        store = await open_store(settings)
        resources.push_async_callback(store.close)
        probes.catalog = store.catalog
        await declare(
            store,
            clock.now(),
            spec(server, "ok", "fine", schedule=every_second),
            spec(server, "fail", "broken", schedule=every_second),
        )
        stop = asyncio.Event()
        worker = asyncio.create_task(
            serve_scheduler(settings, store, clock, stop, probes.telemetry)
        )
        async with asyncio.timeout(DEADLINE):
            await server.until(lambda: min(server.calls_of("fine"), server.calls_of("broken")) >= 3)
            status, ready = await _get(probes.port, "/readyz")
        stop.set()
        await worker
        status_code, exposition = await _get(probes.port, "/metrics")
        expected = await _recorded_runs(store)

    assert status == 200, ready
    assert status_code == 200
    scraped = {
        (labels["endpoint"], labels["outcome"]): value
        for labels, value in _samples(exposition, "cronpilot_runs_total")
    }
    assert scraped == {key: float(count) for key, count in expected.items()}
    assert {key[1] for key in scraped} == {"success", "failed"}
    claimed = _samples(exposition, "cronpilot_claimed_slots_total")
    assert claimed[0][1] >= sum(expected.values())
    lateness = _samples(exposition, "cronpilot_lateness_seconds_count")
    assert lateness == [({"job": "tests"}, float(sum(expected.values())))]
    assert _samples(exposition, "cronpilot_store_up") == [({}, 1.0)]


@pytest.fixture
async def proxied_url(postgres_url: str) -> AsyncIterator[tuple[str, CuttableProxy]]:
    url = make_url(postgres_url)
    async with CuttableProxy(url.port or PG_PORT) as proxy:
        yield url.set(port=proxy.port).render_as_string(hide_password=False), proxy


@pytest.mark.postgres
async def test_readyz_follows_the_database_behind_a_proxy(
    proxied_url: tuple[str, CuttableProxy],
) -> None:
    url, proxy = proxied_url
    # Each reading of this clock is a reuse period later: every /readyz checks again.
    later = itertools.count(step=DATABASE_CHECK_REUSE_SECONDS)
    probes = Probes(
        telemetry=PrometheusTelemetry(),
        readiness=ReadinessProbe(url, clock=lambda: float(next(later))),
        clock=SystemClock(),
    )
    runner = await start_probes(probes, "127.0.0.1", 0)
    assert probes.port is not None
    try:
        ready = await _get(probes.port, "/readyz")
        proxy.sever()
        cut = await _get(probes.port, "/readyz")
        alive = await _get(probes.port, "/healthz")
        proxy.cut = False
        mended = await _get(probes.port, "/readyz")
    finally:
        await runner.cleanup()

    assert ready[0] == 200, ready
    assert cut[0] == 503
    assert '"failed": ["database", "migrations"]' in cut[1]
    assert "127.0.0.1" not in cut[1]
    assert alive[0] == 200
    assert mended[0] == 200, mended


async def test_one_database_check_answers_the_probes_of_its_reuse_period(
    proxied_url: tuple[str, CuttableProxy],
) -> None:
    url, proxy = proxied_url
    now = [0.0]
    readiness = ReadinessProbe(url, clock=lambda: now[0])

    first = await readiness.check()
    proxy.sever()
    reused = await readiness.check()
    now[0] += DATABASE_CHECK_REUSE_SECONDS
    checked = await readiness.check()

    assert first.ready
    assert reused.ready
    assert not checked.ready


async def test_readyz_says_when_migrations_are_not_at_head(sqlite_url: str) -> None:
    engine = create_engine(sqlite_url)
    async with engine.begin() as conn:
        await conn.execute(text("UPDATE alembic_version SET version_num = '0006'"))
    await engine.dispose()

    behind = await ReadinessProbe(sqlite_url).check()

    assert not behind.ready
    assert behind.document()["failed"] == ["migrations"]
    assert "at 0006" in behind.checks[1].detail
    assert "cronpilot db upgrade" in behind.checks[1].detail


async def test_readyz_needs_every_worker_loop_to_have_turned_lately(sqlite_url: str) -> None:
    now = [100.0]
    turns: dict[str, float] = {}
    probe = ReadinessProbe(
        sqlite_url,
        loops=["scheduler"],
        loop_turns=turns,  # type: ignore[arg-type]
        max_loop_age=30,
        clock=lambda: now[0],
    )

    before = await probe.check()
    turns["scheduler"] = 95.0
    fresh = await probe.check()
    now[0] = 130.0
    stale = await probe.check()

    assert before.document()["failed"] == ["scheduler_loop"]
    assert fresh.ready
    assert stale.document()["failed"] == ["scheduler_loop"]
    assert "35 s ago" in stale.checks[2].detail
