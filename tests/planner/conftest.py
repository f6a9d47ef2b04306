"""Fixtures for planner tests: a fake clock starting at `T0`."""

from __future__ import annotations

import pytest

from cronpilot.adapters.manual_clock import FakeClock
from tests.planner.builders import T0


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)
