"""The demo's endpoint simulator over real loopback HTTP, moved through simulated time."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
import pytest

from cronpilot.harness.simulator import Simulator

CYCLE = 100.0
START = datetime(2025, 11, 28, 9, 0, tzinfo=UTC)


@dataclass
class Timeline:
    """The simulator's clock: tests move it instead of waiting."""

    moment: datetime = START
    started: datetime = field(default=START, init=False)

    def __call__(self) -> datetime:
        return self.moment

    def at(self, elapsed: float) -> None:
        self.moment = self.started + timedelta(seconds=elapsed)


@dataclass
class Running:
    simulator: Simulator
    timeline: Timeline
    session: aiohttp.ClientSession
    base_url: str

    async def get(self, path: str, elapsed: float | None = None) -> tuple[int, Any]:
        if elapsed is not None:
            self.timeline.at(elapsed)
        async with self.session.get(self.base_url + path) as response:
            if response.content_type == "application/json":
                return response.status, await response.json()
            return response.status, await response.text()


async def _running(seed: int, slow_seconds: float = 0.5) -> AsyncIterator[Running]:
    timeline = Timeline()
    simulator = Simulator(seed=seed, cycle_seconds=CYCLE, slow_seconds=slow_seconds, now=timeline)
    base_url = await simulator.start()
    try:
        async with aiohttp.ClientSession() as session:
            yield Running(simulator, timeline, session, base_url)
    finally:
        await simulator.stop()


@pytest.fixture
async def sim() -> AsyncIterator[Running]:
    async for running in _running(seed=7):
        yield running


@pytest.fixture
async def twin() -> AsyncIterator[Running]:
    async for running in _running(seed=7):
        yield running


SHAPES: dict[str, dict[str, type | tuple[type, ...]]] = {
    "/fraud/score": {
        "fraud_rate": float,
        "orders_per_min": int,
        "suspicious_orders": int,
        "window": str,
    },
    "/fraud/investigate": {"investigated": list, "confirmed_fraud": int, "fraud_rate": float},
    "/etl/fetch": {"records": int, "last_id": int, "batch_id": str},
    "/etl/transform": {"batch_id": str, "input_records": int, "output_records": int},
    "/etl/load": {"batch_id": str, "loaded": int, "rows_total": int},
    "/queue/depth": {"pending": int, "oldest_age_s": (int, float)},
    "/queue/process": {"processed": int, "remaining": int},
    "/billing/usage": {"spend_usd": float, "budget_usd": float, "projected_usd": float},
    "/billing/cleanup": {"deleted_resources": list, "saved_usd_per_day": (int, float)},
}


@pytest.mark.parametrize("path", sorted(SHAPES))
async def test_routes_answer_their_documented_json(sim: Running, path: str) -> None:
    status, body = await sim.get(path, elapsed=12.0)

    assert status == 200
    for key, kind in SHAPES[path].items():
        assert isinstance(body[key], kind), (path, key, body)


async def test_fraud_rate_rises_then_falls_over_the_sale(sim: Running) -> None:
    rates = [
        (await sim.get("/fraud/score", elapsed=CYCLE * phase))[1]["fraud_rate"]
        for phase in (0.05, 0.35, 0.55, 0.75, 0.97)
    ]

    assert rates[0] < rates[1] < rates[2]
    assert rates[2] > rates[3] > rates[4]
    assert rates[2] > 0.05
    assert max(rates[0], rates[4]) < 0.02


async def test_the_story_depends_only_on_seed_and_elapsed_time(sim: Running, twin: Running) -> None:
    for elapsed in (3.0, 41.5, 77.0):
        for path in ("/fraud/score", "/etl/fetch", "/health/ap", "/billing/usage"):
            assert await sim.get(path, elapsed) == await twin.get(path, elapsed)


async def test_another_seed_tells_another_story(sim: Running) -> None:
    async for other in _running(seed=8):
        ours = [await sim.get("/etl/fetch", float(t)) for t in range(0, 80, 4)]
        theirs = [await other.get("/etl/fetch", float(t)) for t in range(0, 80, 4)]
        assert ours != theirs


async def test_etl_fetch_is_sometimes_empty_and_ids_only_grow(sim: Running) -> None:
    fetches = [(await sim.get("/etl/fetch", float(t)))[1] for t in range(0, 200, 4)]

    assert any(fetch["records"] == 0 for fetch in fetches)
    assert any(fetch["records"] > 0 for fetch in fetches)
    for before, after in itertools.pairwise(fetches):
        assert after["last_id"] == before["last_id"] + after["records"]


async def test_transform_and_load_work_on_the_named_batch(sim: Running) -> None:
    _, fetch = await sim.get("/etl/fetch", elapsed=9.0)
    _, transform = await sim.get(f"/etl/transform?batch_id={fetch['batch_id']}", elapsed=30.0)
    _, load = await sim.get(f"/etl/load?batch_id={fetch['batch_id']}")
    bad_status, bad = await sim.get("/etl/transform?batch_id=yesterday")

    assert transform["batch_id"] == load["batch_id"] == fetch["batch_id"]
    assert transform["input_records"] == fetch["records"]
    assert load["loaded"] == transform["output_records"] <= fetch["records"]
    assert (bad_status, bad) == (400, {"error": "unknown batch_id 'yesterday'"})


async def test_regions_degrade_and_go_down_with_503(sim: Running) -> None:
    seen: dict[str, set[tuple[int, str]]] = {}
    for region in ("eu", "us", "ap"):
        answers = [await sim.get(f"/health/{region}", float(t)) for t in range(0, 400, 2)]
        seen[region] = {(status, body["status"]) for status, body in answers}
    unknown_status, _ = await sim.get("/health/mars")

    assert seen["ap"] == {(200, "ok"), (200, "degraded"), (503, "down")}
    assert (200, "ok") in seen["eu"]
    assert unknown_status == 404


async def test_a_regions_failover_counts_its_calls(sim: Running) -> None:
    answers = [await sim.get("/failover/ap") for _ in range(2)]
    unknown_status, _ = await sim.get("/failover/mars")

    assert answers == [
        (200, {"region": "ap", "serving": "failover", "calls": 1}),
        (200, {"region": "ap", "serving": "failover", "calls": 2}),
    ]
    assert unknown_status == 404


async def test_queue_drains_after_each_burst(sim: Running) -> None:
    _, early = await sim.get("/queue/depth", elapsed=1.0)
    _, late = await sim.get("/queue/depth", elapsed=12.0)

    assert early["pending"] > late["pending"]
    assert early["oldest_age_s"] < late["oldest_age_s"]


async def test_billing_projection_crosses_the_budget_late_in_the_period(sim: Running) -> None:
    _, early = await sim.get("/billing/usage", elapsed=CYCLE * 0.2)
    _, late = await sim.get("/billing/usage", elapsed=CYCLE * 0.9)

    assert early["projected_usd"] < early["budget_usd"] < late["projected_usd"]
    assert early["spend_usd"] < late["spend_usd"]


async def test_html_page_and_oversized_export(sim: Running) -> None:
    async with sim.session.get(sim.base_url + "/status/page") as page:
        assert page.content_type == "text/html"
        assert "<html>" in await page.text()
    async with sim.session.get(sim.base_url + "/reports/export") as export:
        assert export.content_type == "application/json"
        assert len(await export.read()) > 100_000


async def test_slow_report_is_slower_than_a_short_timeout(sim: Running) -> None:
    with pytest.raises(TimeoutError):
        await sim.session.get(
            sim.base_url + "/reports/slow", timeout=aiohttp.ClientTimeout(total=0.1)
        )


async def test_requests_are_counted_per_path(sim: Running) -> None:
    await sim.get("/fraud/score")
    await sim.get("/fraud/score")
    await sim.get("/health/eu")

    assert sim.simulator.requests == {"/fraud/score": 2, "/health/eu": 1}


async def test_the_exam_troubles_answer_over_http_as_their_functions_say(sim: Running) -> None:
    """What the planner exams grade against (`harness/exams/catalog.py`) is what was served."""
    flapping = [(await sim.get("/troubles/flapping", s))[0] for s in (0, 5, 6, 11, 12)]
    assert flapping == [200, 200, 503, 503, 200]
    first = (await sim.get("/troubles/volatile", 1))[1]
    second = (await sim.get("/troubles/volatile", 2))[1]
    volatile = {"generated_at", "request_id"}
    assert {k for k in first if first[k] != second[k]} == volatile
    assert (await sim.get("/troubles/degrading", 10))[1]["status"] == "ok"
    slow = (await sim.get("/troubles/degrading", 30))[1]
    assert slow["status"] == "slow"
    assert 680 * 0.85 <= slow["latency_ms"] <= 680 * 1.15
    assert (await sim.get("/troubles/stock", 39))[0] == 200
    assert (await sim.get("/troubles/stock", 40))[0] == 503
    assert (await sim.get("/troubles/orders", 41))[1] == {"new_orders": 0, "stock": "unavailable"}
    assert (await sim.get("/troubles/signups", 10))[1]["signups_last_minute"] > 0
    night = [(await sim.get("/troubles/signups", s))[1] for s in (30, 90)]
    assert night[0] == night[1] == {"signups_last_minute": 0, "active_sessions": 0}


async def test_the_left_alone_troubles_fail_change_and_swing(sim: Running) -> None:
    """What `bench.left_alone` and `tests/e2e/test_left_alone.py` add to the example jobs."""
    assert [(await sim.get("/troubles/failing", s))[0] for s in (0, 100)] == [500, 500]
    prices = [(await sim.get("/troubles/changing", s))[1] for s in (1, 2, 3)]
    assert prices[0] != prices[1] != prices[2]
    depths = [(await sim.get("/troubles/swinging", s))[1]["pending"] for s in (0, 39, 40, 79, 80)]
    assert [depth > 200 for depth in depths] == [True, True, False, False, True]
    assert all(depth > 200 or depth < 50 for depth in depths)
