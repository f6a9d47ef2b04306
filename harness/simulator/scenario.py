"""The simulated business behind the demo endpoints: a flash sale, an ETL feed, three regions, a
work queue and a cloud bill, all driven by elapsed time.

Every payload is a pure function of (seed, start time, elapsed seconds), so a test can replay
any moment of the story and two simulators with the same seed tell the same story. Randomness is
drawn per time bucket from a generator seeded with the topic and bucket, never from shared state.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

Payload = dict[str, Any]

REGIONS = ("eu", "us", "ap")


@dataclass(frozen=True, slots=True)
class RegionProfile:
    """How a region behaves: typical latency and how often it degrades or goes down."""

    latency_ms: float
    degraded_chance: float
    down_chance: float


REGION_PROFILES: dict[str, RegionProfile] = {
    "eu": RegionProfile(latency_ms=42, degraded_chance=0.05, down_chance=0.02),
    "us": RegionProfile(latency_ms=85, degraded_chance=0.12, down_chance=0.04),
    "ap": RegionProfile(latency_ms=190, degraded_chance=0.25, down_chance=0.12),
}

_FRAUD_BASE = 0.008
_FRAUD_SURGE = 0.085
_FRAUD_PEAK_PHASE = 0.55
_FRAUD_PEAK_WIDTH = 0.15
_ETL_BUCKET_S = 4.0
_ETL_EMPTY_CHANCE = 0.35
_ETL_FIRST_ID = 1000
_HEALTH_BUCKET_S = 2.0
_QUEUE_BURST_S = 20.0
_QUEUE_BURST_SIZE = 600
_QUEUE_DRAIN_PER_S = 45
_BUDGET_USD = 5000.0


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def _bell(phase: float, centre: float, width: float) -> float:
    return math.exp(-(((phase - centre) / width) ** 2))


@dataclass(slots=True)
class Scenario:
    """The story for one simulator run. `cycle_seconds` is how long one flash sale (and one
    billing period) lasts, so a demo of that length shows a full rise and fall."""

    seed: int
    started_at: datetime
    cycle_seconds: float = 60.0
    _etl_last_ids: list[int] = field(default_factory=list, init=False, repr=False)

    def _rng(self, topic: str, bucket: int) -> random.Random:
        return random.Random(f"{self.seed}:{topic}:{bucket}")

    def _phase(self, elapsed: float) -> float:
        return (elapsed % self.cycle_seconds) / self.cycle_seconds

    def _at(self, elapsed: float) -> datetime:
        return self.started_at + timedelta(seconds=elapsed)

    # --- flash sale -------------------------------------------------------------------------

    def fraud_score(self, elapsed: float) -> Payload:
        phase = self._phase(elapsed)
        noise = self._rng("fraud", int(elapsed))
        traffic = math.sin(math.pi * phase) ** 2
        orders = round((300 + 900 * traffic) * noise.uniform(0.95, 1.05))
        surge = _bell(phase, _FRAUD_PEAK_PHASE, _FRAUD_PEAK_WIDTH)
        rate = (_FRAUD_BASE + _FRAUD_SURGE * surge) * noise.uniform(0.95, 1.05)
        now = self._at(elapsed)
        return {
            "fraud_rate": round(rate, 4),
            "orders_per_min": orders,
            "suspicious_orders": round(orders * rate),
            "sale_phase": "warming up"
            if phase < 0.3
            else "peak"
            if phase < 0.7
            else "cooling down",
            "window": f"{_iso(now - timedelta(minutes=1))}/{_iso(now)}",
        }

    def fraud_investigation(self, elapsed: float) -> Payload:
        score = self.fraud_score(elapsed)
        rng = self._rng("investigate", int(elapsed))
        orders = [
            f"ord-{rng.randrange(10**6, 10**7)}" for _ in range(min(score["suspicious_orders"], 5))
        ]
        confirmed = sum(rng.random() < 0.6 for _ in orders)
        return {
            "investigated": orders,
            "confirmed_fraud": confirmed,
            "blocked_usd": round(confirmed * rng.uniform(80, 400), 2),
            "fraud_rate": score["fraud_rate"],
            "window": score["window"],
        }

    # --- ETL feed ---------------------------------------------------------------------------

    def _etl_records(self, bucket: int) -> int:
        rng = self._rng("etl", bucket)
        return 0 if rng.random() < _ETL_EMPTY_CHANCE else rng.randint(20, 400)

    def _etl_last_id(self, bucket: int) -> int:
        """Ids only grow, so the running total is extended once per new bucket and memoised."""
        ids = self._etl_last_ids
        while len(ids) <= bucket:
            previous = ids[-1] if ids else _ETL_FIRST_ID
            ids.append(previous + self._etl_records(len(ids)))
        return ids[bucket]

    def etl_bucket(self, elapsed: float) -> int:
        return int(elapsed // _ETL_BUCKET_S)

    def etl_fetch(self, elapsed: float) -> Payload:
        bucket = self.etl_bucket(elapsed)
        return {
            "records": self._etl_records(bucket),
            "last_id": self._etl_last_id(bucket),
            "batch_id": f"batch-{bucket}",
        }

    def etl_transform(self, bucket: int) -> Payload:
        records = self._etl_records(bucket)
        rejected = min(records, self._rng("transform", bucket).randint(0, 6))
        return {
            "batch_id": f"batch-{bucket}",
            "input_records": records,
            "output_records": records - rejected,
            "rejected": rejected,
        }

    def etl_load(self, bucket: int) -> Payload:
        loaded = self.etl_transform(bucket)["output_records"]
        return {
            "batch_id": f"batch-{bucket}",
            "loaded": loaded,
            "table": "analytics.orders_fact",
            "rows_total": 250_000 + self._etl_last_id(bucket) - _ETL_FIRST_ID,
        }

    # --- regional health --------------------------------------------------------------------

    def health(self, region: str, elapsed: float) -> Payload:
        """A region's health; `status == "down"` is served as HTTP 503."""
        profile = REGION_PROFILES[region]
        rng = self._rng(f"health-{region}", int(elapsed // _HEALTH_BUCKET_S))
        roll = rng.random()
        latency = profile.latency_ms * rng.uniform(0.8, 1.3)
        if roll < profile.down_chance:
            status, latency = "down", 0.0
        elif roll < profile.down_chance + profile.degraded_chance:
            status, latency = "degraded", latency * rng.uniform(4, 9)
        else:
            status = "ok"
        return {
            "region": region,
            "status": status,
            "latency_ms": round(latency, 1),
            "checked_at": _iso(self._at(elapsed)),
        }

    # --- work queue -------------------------------------------------------------------------

    def queue_depth(self, elapsed: float) -> Payload:
        since_burst = elapsed % _QUEUE_BURST_S
        rng = self._rng("queue", int(elapsed))
        pending = max(0, _QUEUE_BURST_SIZE - round(_QUEUE_DRAIN_PER_S * since_burst))
        pending += rng.randint(0, 15)
        return {
            "pending": pending,
            "oldest_age_s": round(since_burst, 1),
            "consumers": 3,
        }

    def queue_process(self, elapsed: float) -> Payload:
        pending = self.queue_depth(elapsed)["pending"]
        processed = min(pending, 100)
        return {
            "processed": processed,
            "failed": self._rng("process", int(elapsed)).randint(0, 2) if processed else 0,
            "remaining": pending - processed,
        }

    # --- cloud bill -------------------------------------------------------------------------

    def billing_usage(self, elapsed: float) -> Payload:
        """Spend accelerates through the period, so the projection crosses the budget about
        two thirds of the way in."""
        period_fraction = max(self._phase(elapsed), 0.01)
        spend = 3000 * period_fraction + 3000 * period_fraction**2
        projected = spend / period_fraction
        return {
            "spend_usd": round(spend, 2),
            "budget_usd": _BUDGET_USD,
            "projected_usd": round(projected, 2),
            "period_elapsed": round(period_fraction, 3),
            "forecast": "over_budget" if projected > _BUDGET_USD else "on_track",
        }

    # --- a report that does not change -------------------------------------------------------

    def daily_report(self, elapsed: float) -> Payload:
        """Yesterday's figures: the same answer all day, so polling it often is waste."""
        return {"report": "daily-revenue", "day": _iso(self.started_at)[:10], "rows": 1200}

    def billing_cleanup(self, elapsed: float) -> Payload:
        rng = self._rng("cleanup", int(elapsed))
        deleted = [f"vol-{rng.randrange(16**8):08x}" for _ in range(rng.randint(0, 4))]
        return {
            "deleted_resources": deleted,
            "saved_usd_per_day": round(len(deleted) * rng.uniform(1.5, 12.0), 2),
        }
