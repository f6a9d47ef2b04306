"""The simulated troubles behind the planner exams (`cronpilot planner eval`): a health check
that flaps, a report whose only changes are a timestamp and a request id, an API that slows
down, a stock service that goes down under the orders that read it, and sign-ups that go quiet
for the night; and those of the left-alone trial (`bench.left_alone`): a service that always
fails, a price that changes on every call and a queue whose depth swings.

Like `scenario`, every answer is a pure function of (seed, start time, elapsed seconds), so an
exam can say what the right call was at any moment from the same functions that answered.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

Payload = dict[str, Any]
Answer = tuple[int, Payload]
"""An HTTP status and the JSON body served with it."""

FLAP_SECONDS = 6
"""The flapping check is up this long, then down this long, and so on."""
SWING_SECONDS = 40
"""The swinging queue is deep this long, then nearly empty this long, and so on."""
SLOW_FROM_MS = 600.0
"""The degrading API's latency from which it counts as slow."""
_LATENCY_START_MS = 80.0
_LATENCY_GROWTH_MS_PER_S = 20.0
STOCK_DOWN_AT = 40.0
"""Seconds after the start at which the stock service goes down, for good."""
NIGHT_AT = 30.0
"""Seconds after the start at which the sign-ups stop for the night."""


@dataclass(frozen=True, slots=True)
class Troubles:
    seed: int
    started_at: datetime

    def _rng(self, topic: str, elapsed: float) -> random.Random:
        return random.Random(f"{self.seed}:{topic}:{int(elapsed)}")

    def flapping_up(self, elapsed: float) -> bool:
        return int(elapsed // FLAP_SECONDS) % 2 == 0

    def swinging_queue(self, elapsed: float) -> Answer:
        """A queue's depth that swings between deep and nearly empty: rules that follow it
        without damping change their endpoint at every swing."""
        deep = int(elapsed // SWING_SECONDS) % 2 == 0
        return 200, {"pending": 600 if deep else 10}

    def flapping_check(self, elapsed: float) -> Answer:
        if self.flapping_up(elapsed):
            return 200, {"status": "ok"}
        return 503, {"status": "down", "error": "connection pool exhausted"}

    def volatile_report(self, elapsed: float) -> Answer:
        """The same figures every time; only when it was made and the request's id change."""
        made = self.started_at + timedelta(seconds=elapsed)
        return 200, {
            "report": "stock-value",
            "rows": 1200,
            "total_usd": 48210.5,
            "generated_at": made.isoformat().replace("+00:00", "Z"),
            "request_id": str(uuid.UUID(int=self._rng("request", elapsed).getrandbits(128))),
        }

    def latency_ms(self, elapsed: float) -> float:
        """A trend with jitter, as latencies go: a value that rose on every call would look
        like a counter to the volatile-field learner."""
        trend = _LATENCY_START_MS + _LATENCY_GROWTH_MS_PER_S * int(elapsed)
        return round(trend * self._rng("latency", elapsed).uniform(0.85, 1.15), 1)

    def degrading_api(self, elapsed: float) -> Answer:
        latency = self.latency_ms(elapsed)
        status = "slow" if latency >= SLOW_FROM_MS else "ok"
        return 200, {"status": status, "latency_ms": latency}

    def stock_up(self, elapsed: float) -> bool:
        return elapsed < STOCK_DOWN_AT

    def stock(self, elapsed: float) -> Answer:
        if not self.stock_up(elapsed):
            return 503, {"error": "stock database unreachable"}
        return 200, {"items": 1200 - int(elapsed), "status": "ok"}

    def orders(self, elapsed: float) -> Answer:
        """New orders while stock answers; none (and the reason) once it is down."""
        if not self.stock_up(elapsed):
            return 200, {"new_orders": 0, "stock": "unavailable"}
        return 200, {"new_orders": self._rng("orders", elapsed).randint(3, 30), "stock": "ok"}

    def night(self, elapsed: float) -> bool:
        return elapsed >= NIGHT_AT

    def signups(self, elapsed: float) -> Answer:
        if self.night(elapsed):
            return 200, {"signups_last_minute": 0, "active_sessions": 0}
        rng = self._rng("signups", elapsed)
        return 200, {
            "signups_last_minute": rng.randint(5, 40),
            "active_sessions": rng.randint(200, 900),
        }

    def failing(self, elapsed: float) -> Answer:
        return 500, {"error": "internal server error"}

    def changing_price(self, elapsed: float) -> Answer:
        """A new price on every call (every second of elapsed time)."""
        rng = self._rng("price", elapsed)
        return 200, {"price_usd": round(rng.uniform(10, 20), 2), "volume": rng.randint(1, 500)}
