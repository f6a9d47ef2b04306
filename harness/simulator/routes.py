"""HTTP face of the scenario: one aiohttp route per demo endpoint, plus endpoints whose answers
cronpilot does not store (an HTML page, an oversized export), a slow report, an endpoint that
fails on cue (`/flaky/{key}`), a region's standby (`/failover/{region}`), a webhook sink
that keeps the alerts it receives (`/hooks/alerts`), and the troubles of the planner exams
(`/troubles/...`)."""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter, deque
from collections.abc import Callable
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Handler

from cronpilot.adapters.http.signing import SIGNATURE_HEADER
from cronpilot.harness.simulator.scenario import REGIONS, Scenario
from cronpilot.harness.simulator.troubles import Answer, Troubles

_BATCH_ID = re.compile(r"batch-(\d+)")
_EXPORT_ROWS = 4000
MAX_KEPT_ALERTS = 200
"""The webhook sink keeps the newest alerts only."""
"""About 300 KB of JSON: three times cronpilot's default body cap."""

_STATUS_PAGE = """<!doctype html>
<html><head><title>Shop status</title></head>
<body><h1>All systems normal</h1><p>Seconds since launch: {elapsed:.0f}</p></body></html>
"""


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


class SimulatorRoutes:
    """Handlers reading the scenario at the simulator's current elapsed time."""

    def __init__(
        self,
        scenario: Scenario,
        troubles: Troubles,
        *,
        elapsed: Callable[[], float],
        slow_seconds: float,
        requests: Counter[str],
        alerts: deque[dict[str, Any]],
    ) -> None:
        self._scenario = scenario
        self._troubles = troubles
        self._elapsed = elapsed
        self._slow_seconds = slow_seconds
        self._requests = requests
        self._alerts = alerts
        self._flaky_calls: Counter[str] = Counter()

    def application(self) -> web.Application:
        app = web.Application(middlewares=[self._count])
        scenario = self._scenario
        simple: dict[str, Callable[[float], dict[str, Any]]] = {
            "/fraud/score": scenario.fraud_score,
            "/fraud/investigate": scenario.fraud_investigation,
            "/etl/fetch": scenario.etl_fetch,
            "/queue/depth": scenario.queue_depth,
            "/queue/process": scenario.queue_process,
            "/billing/usage": scenario.billing_usage,
            "/billing/cleanup": scenario.billing_cleanup,
            "/reports/daily": scenario.daily_report,
        }
        for path, payload in simple.items():
            app.router.add_route("*", path, self._serving(payload))
        troubles = self._troubles
        answering: dict[str, Callable[[float], Answer]] = {
            "/troubles/failing": troubles.failing,
            "/troubles/changing": troubles.changing_price,
            "/troubles/flapping": troubles.flapping_check,
            "/troubles/volatile": troubles.volatile_report,
            "/troubles/degrading": troubles.degrading_api,
            "/troubles/stock": troubles.stock,
            "/troubles/orders": troubles.orders,
            "/troubles/signups": troubles.signups,
            "/troubles/swinging": troubles.swinging_queue,
        }
        for path, answer in answering.items():
            app.router.add_get(path, self._answering(answer))
        app.router.add_route("*", "/etl/transform", self._batch_handler(scenario.etl_transform))
        app.router.add_route("*", "/etl/load", self._batch_handler(scenario.etl_load))
        app.router.add_get("/health/{region}", self._health)
        app.router.add_route("*", "/failover/{region}", self._failover)
        app.router.add_get("/status/page", self._status_page)
        app.router.add_get("/reports/slow", self._slow_report)
        app.router.add_get("/reports/export", self._export)
        app.router.add_get("/flaky/{key}", self._flaky)
        app.router.add_post("/hooks/alerts", self._receive_alert)
        app.router.add_get("/hooks/alerts", self._received_alerts)
        return app

    @web.middleware
    async def _count(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        self._requests[request.path] += 1
        return await handler(request)

    def _serving(self, payload: Callable[[float], dict[str, Any]]) -> Handler:
        async def handle(_: web.Request) -> web.StreamResponse:
            return web.json_response(payload(self._elapsed()))

        return handle

    def _answering(self, answer: Callable[[float], Answer]) -> Handler:
        async def handle(_: web.Request) -> web.StreamResponse:
            status, payload = answer(self._elapsed())
            return web.json_response(payload, status=status)

        return handle

    def _batch_handler(self, payload: Callable[[int], dict[str, Any]]) -> Handler:
        """Transform and load work on the batch named by `batch_id` (query or JSON body), so a
        DAG can pass the fetched batch along; without one they take the current batch."""

        async def handle(request: web.Request) -> web.StreamResponse:
            batch_id = request.query.get("batch_id")
            if batch_id is None and request.content_type == "application/json":
                try:
                    body = await request.json()
                except json.JSONDecodeError:
                    return _error(400, "request body is not valid JSON")
                if isinstance(body, dict):
                    batch_id = body.get("batch_id")
            if batch_id is None:
                return web.json_response(payload(self._scenario.etl_bucket(self._elapsed())))
            match = _BATCH_ID.fullmatch(str(batch_id))
            if match is None:
                return _error(400, f"unknown batch_id {batch_id!r}")
            return web.json_response(payload(int(match.group(1))))

        return handle

    async def _health(self, request: web.Request) -> web.StreamResponse:
        region = request.match_info["region"]
        if region not in REGIONS:
            return _error(404, f"unknown region {region!r}")
        health = self._scenario.health(region, self._elapsed())
        return web.json_response(health, status=503 if health["status"] == "down" else 200)

    async def _failover(self, request: web.Request) -> web.StreamResponse:
        """A region's standby: it serves the region's traffic while the region is down, and
        says how often it was called (the demo's rules run it only then)."""
        region = request.match_info["region"]
        if region not in REGIONS:
            return _error(404, f"unknown region {region!r}")
        key = f"failover-{region}"
        self._flaky_calls[key] += 1
        return web.json_response(
            {"region": region, "serving": "failover", "calls": self._flaky_calls[key]}
        )

    async def _status_page(self, _: web.Request) -> web.StreamResponse:
        return web.Response(
            text=_STATUS_PAGE.format(elapsed=self._elapsed()), content_type="text/html"
        )

    async def _slow_report(self, _: web.Request) -> web.StreamResponse:
        # Slowness is the point of this endpoint: it shows timeouts and long durations in runs.
        await asyncio.sleep(self._slow_seconds)
        return web.json_response({"report": "daily-revenue", "rows": 1200})

    async def _flaky(self, request: web.Request) -> web.StreamResponse:
        """Fails `fail` calls, then succeeds `recover` calls, and again, counted per key;
        without `recover` it succeeds for good after the first `fail` calls. A failure answers
        `status` (503 by default, or 429), with `Retry-After: retry_after` when given."""
        try:
            fail = int(request.query.get("fail", "3"))
            recover = int(request.query.get("recover", "0"))
            status = int(request.query.get("status", "503"))
            retry_after = request.query.get("retry_after")
            wait = None if retry_after is None else int(retry_after)
        except ValueError:
            return _error(400, "fail, recover, status and retry_after are whole numbers")
        if fail < 0 or recover < 0 or (wait is not None and wait < 0):
            return _error(400, "fail, recover and retry_after must not be negative")
        if status not in (429, 503):
            return _error(400, "status is 429 or 503")
        key = request.match_info["key"]
        call = self._flaky_calls[key]
        self._flaky_calls[key] += 1
        phase = call % (fail + recover) if recover else call
        if phase < fail:
            failure = _error(status, f"{key} is failing (call {call + 1})")
            if wait is not None:
                failure.headers["Retry-After"] = str(wait)
            return failure
        return web.json_response({"key": key, "call": call + 1, "status": "ok"})

    async def _receive_alert(self, request: web.Request) -> web.StreamResponse:
        try:
            event = await request.json()
        except json.JSONDecodeError:
            return _error(400, "an alert is a JSON document")
        self._alerts.append(
            {
                "event": event,
                "signed": SIGNATURE_HEADER in request.headers,
                "received_at_elapsed": self._elapsed(),
            }
        )
        return web.json_response({"received": len(self._alerts)})

    async def _received_alerts(self, _: web.Request) -> web.StreamResponse:
        return web.json_response({"alerts": list(self._alerts)})

    async def _export(self, _: web.Request) -> web.StreamResponse:
        rows = [
            {"order_id": 100_000 + i, "status": "shipped", "total_usd": 42.5}
            for i in range(_EXPORT_ROWS)
        ]
        return web.json_response({"rows": rows})
