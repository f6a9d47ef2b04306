"""The freshness an exam's calls kept (`harness/exams/freshness.py`): rates estimated from the
runs, the reached share beside as many calls spread evenly and split best."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from cronpilot.domain.model import (
    Endpoint,
    EndpointSpec,
    Run,
    RunStatus,
    RunTrigger,
    Schedule,
    ScheduleSource,
)
from cronpilot.harness.exams.freshness import freshness_of

T0 = datetime(2026, 11, 29, tzinfo=UTC)


def _endpoint(name: str, schedule: Schedule) -> Endpoint:
    spec = EndpointSpec(
        name, "http://x", schedule, min_interval_seconds=5.0, max_interval_seconds=60.0
    )
    return Endpoint(name, "j", "job", spec)


def _runs(endpoint: Endpoint, every: int, count: int, changing: bool) -> list[Run]:
    return [
        Run(
            id=f"{endpoint.id}{i}",
            endpoint_id=endpoint.id,
            job_id="j",
            trace_id="t",
            trigger=RunTrigger.SCHEDULE,
            schedule_source=ScheduleSource.BASELINE,
            status=RunStatus.SUCCESS,
            slot_at=T0 + timedelta(seconds=every * i),
            started_at=T0 + timedelta(seconds=every * i),
            worker_id="w",
            body_hash=str(i if changing else 0),
        )
        for i in range(count)
    ]


def test_a_busy_and_a_silent_endpoint_beside_the_even_and_best_splits() -> None:
    busy, silent = _endpoint("busy", Schedule(None, 5.0)), _endpoint("silent", Schedule(None, 5.0))
    dependant = _endpoint("child", Schedule())
    runs = {
        busy.id: _runs(busy, 10, 13, changing=True),
        silent.id: _runs(silent, 10, 13, changing=False),
        dependant.id: _runs(dependant, 10, 13, changing=True),
    }
    found = freshness_of([busy, silent, dependant], runs, 120.0, T0)
    assert found is not None
    # The DAG dependant spends no calls of its own: left out.
    assert (found.endpoints, found.calls, found.changed) == (2, 24, 0.5)
    # Both called every 10 s, the even split of their calls: the planner reached it exactly.
    assert found.reached == pytest.approx(found.even)
    # The best split calls the silent one once a minute and the busy one more often.
    assert 0 < found.even < found.best <= 1


def test_none_without_two_answers() -> None:
    lone = _endpoint("lone", Schedule(None, 5.0))
    assert freshness_of([lone], {lone.id: _runs(lone, 5, 1, changing=True)}, 60.0, T0) is None
