"""Lateness is measured from the slot a run was for: a call the min clamp (or a catch-up)
pushed past its slot is late by that much, a jittered call on time is not late at all."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from prometheus_client.parser import text_string_to_metric_families

from cronpilot.adapters.metrics import PrometheusTelemetry
from cronpilot.domain.model import (
    Claim,
    Endpoint,
    EndpointSpec,
    Recorded,
    Run,
    RunStatus,
    RunTrigger,
    Schedule,
    ScheduleSource,
)
from cronpilot.domain.schedule.governor import due_at
from cronpilot.domain.schedule.jitter import jittered

SLOT = datetime(2030, 1, 1, tzinfo=UTC)
S = ScheduleSource
EVERY_MINUTE = Schedule(interval_seconds=60)


def _endpoint(jitter: float | None = None) -> Endpoint:
    spec = EndpointSpec("fetch", "https://example.com/fetch", EVERY_MINUTE, jitter_seconds=jitter)
    return Endpoint("ep-1", "job-1", "etl", spec)


def _claim(endpoint: Endpoint, source: ScheduleSource, call_at: datetime | None) -> Claim:
    return Claim(endpoint, "run-1", SLOT, "trace-1", SLOT, source, call_at=call_at)


def _lateness_sum(claim: Claim, started: datetime) -> float:
    run = Run(
        id="run-1",
        endpoint_id="ep-1",
        job_id="job-1",
        trace_id="trace-1",
        trigger=RunTrigger.SCHEDULE,
        schedule_source=claim.schedule_source,
        status=RunStatus.SUCCESS,
        slot_at=claim.slot_at,
        started_at=started,
        worker_id="w1",
    )
    telemetry = PrometheusTelemetry()
    telemetry.recorded(claim, Recorded(run, []))
    body, _ = telemetry.exposition()
    [total] = [
        sample.value
        for family in text_string_to_metric_families(body.decode())
        for sample in family.samples
        if sample.name == "cronpilot_lateness_seconds_sum"
    ]
    return total


@pytest.mark.parametrize("source", [S.CLAMPED_MIN, S.BASELINE])
def test_a_call_pushed_past_its_slot_is_late_by_that_much(source: ScheduleSource) -> None:
    """Pushed 0.95 s by the min clamp, or caught up after a downtime, and called on time."""
    called = SLOT + timedelta(seconds=0.95)
    claim = _claim(_endpoint(), source, called)

    assert due_at(claim) == SLOT
    assert _lateness_sum(claim, called) == pytest.approx(0.95)


def test_a_jittered_call_at_its_call_time_is_on_time() -> None:
    endpoint = _endpoint(jitter=30)
    floor = timedelta(seconds=endpoint.spec.floor_seconds)
    call = jittered("ep-1", SLOT, SLOT + timedelta(seconds=60), timedelta(seconds=30), floor)
    assert call > SLOT
    claim = _claim(endpoint, S.BASELINE, call)

    assert due_at(claim) == call
    assert _lateness_sum(claim, call) == 0


def test_a_hint_s_call_is_due_when_it_was_planned() -> None:
    claim = _claim(_endpoint(), S.HINT_ONESHOT, None)

    assert due_at(claim) == SLOT
