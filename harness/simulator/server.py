"""The endpoint simulator as a server on the loopback interface."""

from __future__ import annotations

import logging
from collections import Counter, deque
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from cronpilot.domain.log_extra import log_extra
from cronpilot.harness.simulator.routes import MAX_KEPT_ALERTS, SimulatorRoutes
from cronpilot.harness.simulator.scenario import Scenario
from cronpilot.harness.simulator.troubles import Troubles

logger = logging.getLogger(__name__)

_SHUTDOWN_SECONDS = 1.0
"""How long `stop` lets in-flight requests (such as the slow report) finish."""


def _utc_now() -> datetime:
    return datetime.now(UTC)


class Simulator:
    """Serves the demo endpoints on 127.0.0.1.

    The story is told in the simulator's own time: `now` is read at `start` and at each request,
    so a test passing a controllable `now` can jump to any moment without sleeping. `requests`
    counts requests per path; `alerts` holds the newest alerts posted to `/hooks/alerts`.
    """

    def __init__(
        self,
        seed: int = 7,
        cycle_seconds: float = 60.0,
        port: int = 0,
        slow_seconds: float = 1.5,
        now: Callable[[], datetime] = _utc_now,
    ) -> None:
        self.seed = seed
        self.cycle_seconds = cycle_seconds
        self.slow_seconds = slow_seconds
        self.requests: Counter[str] = Counter()
        self.alerts: deque[dict[str, Any]] = deque(maxlen=MAX_KEPT_ALERTS)
        self._port = port
        self._now = now
        self._runner: web.AppRunner | None = None
        self._started_at = now()

    async def start(self) -> str:
        """Start serving and return the base URL, e.g. `http://127.0.0.1:40123`."""
        self._started_at = self._now()
        scenario = Scenario(self.seed, self._started_at, self.cycle_seconds)
        routes = SimulatorRoutes(
            scenario,
            Troubles(self.seed, self._started_at),
            elapsed=self._elapsed,
            slow_seconds=self.slow_seconds,
            requests=self.requests,
            alerts=self.alerts,
        )
        runner = web.AppRunner(
            routes.application(), access_log=None, shutdown_timeout=_SHUTDOWN_SECONDS
        )
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", self._port)
        try:
            await site.start()
        except OSError:
            await runner.cleanup()
            raise
        self._runner = runner
        host, port = runner.addresses[0][:2]
        base_url = f"http://{host}:{port}"
        logger.info(
            "simulator listening on %s",
            base_url,
            extra=log_extra("simulator_start", seed=self.seed),
        )
        return base_url

    def _elapsed(self) -> float:
        return (self._now() - self._started_at).total_seconds()

    async def stop(self) -> None:
        if self._runner is None:
            return
        runner, self._runner = self._runner, None
        await runner.cleanup()
        logger.info("simulator stopped", extra=log_extra("simulator_stop"))
