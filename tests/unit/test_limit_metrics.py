"""Each limit's gauges: calls in flight and what the last claim held back, by reason."""

from __future__ import annotations

from cronpilot.adapters.metrics import PrometheusTelemetry
from cronpilot.domain.schedule.limits import HoldReason, Limit, LimitState, LimitStatus


def test_limit_gauges_per_key() -> None:
    telemetry = PrometheusTelemetry()
    held = LimitState(Limit("partner", concurrency=2), held=3, hold_reason=HoldReason.CONCURRENCY)

    telemetry.limit_figures([LimitStatus(held, 2), LimitStatus(LimitState(Limit("idle", 1)), 0)])

    text = telemetry.exposition()[0].decode()
    assert 'cronpilot_limit_in_flight{limit="partner"} 2.0' in text
    assert 'cronpilot_limit_held{limit="partner",reason="concurrency"} 3.0' in text
    assert 'cronpilot_limit_held{limit="partner",reason="rate"} 0.0' in text
    assert 'cronpilot_limit_in_flight{limit="idle"} 0.0' in text
