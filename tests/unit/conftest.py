"""Shared builders for the pure-domain unit tests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from cronpilot.domain.model import (
    DEFAULT_CATCH_UP_WINDOW_SECONDS,
    DEFAULT_FLOOR_SECONDS,
    CatchUp,
    Endpoint,
    EndpointSpec,
    Schedule,
)


def _make_endpoint(
    *,
    interval: float | None = 60.0,
    cron: str | None = None,
    timezone: str = "UTC",
    min_interval: float | None = None,
    max_interval: float | None = None,
    jitter: float | None = None,
    catch_up: CatchUp = CatchUp.ONE,
    catch_up_window: float = DEFAULT_CATCH_UP_WINDOW_SECONDS,
    floor: float = DEFAULT_FLOOR_SECONDS,
    endpoint_id: str = "ep-1",
    **state: Any,
) -> Endpoint:
    """An endpoint with an interval baseline unless `cron` is given; `state` sets runtime fields."""
    schedule = Schedule(cron=cron, interval_seconds=None if cron else interval, timezone=timezone)
    spec = EndpointSpec(
        name="probe",
        url="https://example.com/probe",
        schedule=schedule,
        min_interval_seconds=min_interval,
        max_interval_seconds=max_interval,
        jitter_seconds=jitter,
        catch_up=catch_up,
        catch_up_window_seconds=catch_up_window,
        floor_seconds=floor,
    )
    return Endpoint(id=endpoint_id, job_id="job-1", job_name="job", spec=spec, **state)


@pytest.fixture
def make_endpoint() -> Callable[..., Endpoint]:
    return _make_endpoint
