"""Fixtures for planner tests: a fake clock starting at `T0`."""

from __future__ import annotations

import pytest

from tests.integration.planner.builders import T0
from tests.support.clock import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)
