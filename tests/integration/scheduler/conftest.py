"""Fixtures for scheduler tests: a fake clock, a loopback endpoint server, a real dispatcher."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from cronpilot.adapters.wake import InProcessWaker
from tests.support.clock import FakeClock

LOOPBACK = ["127.0.0.1/32"]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def waker() -> AsyncIterator[InProcessWaker]:
    made = InProcessWaker()
    try:
        yield made
    finally:
        await made.close()
