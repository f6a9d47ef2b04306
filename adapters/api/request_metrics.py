"""Every API request counted and timed by the route template it matched (decision 0018):
`/runs/{run_id}` once, however many run ids are asked for, so the labels stay bounded."""

from __future__ import annotations

import time
from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from cronpilot.adapters.metrics import PrometheusTelemetry


class RequestMetrics:
    """ASGI middleware: after the app has answered, the router has left the route it matched
    in the request's scope; its template is the label."""

    def __init__(
        self,
        app: ASGIApp,
        telemetry: PrometheusTelemetry,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.app = app
        self.telemetry = telemetry
        self.clock = clock

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = self.clock()
        status = 500  # what an app that raised before answering is answered with

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            route = scope.get("route")
            template = getattr(route, "path", None)
            self.telemetry.served(
                scope["method"],
                template if isinstance(template, str) else None,
                status,
                self.clock() - started,
            )
