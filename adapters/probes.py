"""A worker's probe server (`--metrics-port`): `/metrics`, `/healthz` and `/readyz` on aiohttp,
the HTTP library the workers already run. Each page is also a plain coroutine returning
(status, body, content type), for the API to serve on its own routes."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from aiohttp import web

from cronpilot.adapters.health import ReadinessProbe
from cronpilot.adapters.metrics import PrometheusTelemetry
from cronpilot.adapters.sockets import listening_socket
from cronpilot.domain.errors import CronpilotError
from cronpilot.domain.log_extra import log_extra
from cronpilot.domain.ports import CatalogRepository, Clock

log = logging.getLogger(__name__)

JSON_TYPE = "application/json"

Page = tuple[int, bytes, str]
"""Status, body and content type."""
Handler = Callable[[web.Request], Awaitable[web.Response]]


@dataclass(slots=True)
class Probes:
    telemetry: PrometheusTelemetry
    readiness: ReadinessProbe
    clock: Clock
    catalog: CatalogRepository | None = None
    """The store's catalog once it is open: the gauges read at scrape time come from it."""
    port: int | None = None
    """The port served on, once started (the one the system chose for port 0)."""

    async def metrics(self) -> Page:
        figures, limits = None, None
        if self.catalog is not None:
            try:
                figures = await self.catalog.figures(self.clock.now())
                limits = await self.catalog.limits()
            except CronpilotError as error:
                log.debug(
                    "scrape without the store's figures (%s)",
                    type(error).__name__,
                    extra=log_extra("metrics_store_unavailable"),
                )
        self.telemetry.store_figures(figures)
        if limits is not None:
            self.telemetry.limit_figures(limits)
        body, content_type = self.telemetry.exposition()
        return 200, body, content_type

    async def ready(self) -> Page:
        readiness = await self.readiness.check()
        body = json.dumps(readiness.document()).encode()
        return (200 if readiness.ready else 503), body, JSON_TYPE


async def alive() -> Page:
    return 200, b'{"alive":true}', JSON_TYPE


def probes_app(probes: Probes) -> web.Application:
    app = web.Application()
    app.router.add_get("/metrics", _handler(probes.metrics))
    app.router.add_get("/healthz", _handler(alive))
    app.router.add_get("/readyz", _handler(probes.ready))
    return app


def _handler(page: Callable[[], Awaitable[Page]]) -> Handler:
    async def handler(_request: web.Request) -> web.Response:
        status, body, content_type = await page()
        return web.Response(status=status, body=body, headers={"Content-Type": content_type})

    return handler


async def start_probes(probes: Probes, host: str, port: int) -> web.AppRunner:
    """Serve the probes on `host:port` until the runner is cleaned up."""
    listening = listening_socket(host, port, "--metrics-port")
    runner = web.AppRunner(probes_app(probes), access_log=None)
    await runner.setup()
    await web.SockSite(runner, listening).start()
    probes.port = runner.addresses[0][1]
    log.info(
        "probes on http://%s:%d (/metrics, /healthz, /readyz)",
        host,
        probes.port,
        extra=log_extra("probes_start", port=probes.port),
    )
    return runner
