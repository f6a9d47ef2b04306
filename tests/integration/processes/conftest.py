"""Fixtures of the tests that run scheduler processes on one PostgreSQL: the store the processes
write (the loopback endpoint `server` is the suite's). Each module declares its own `processes`
(the settings its story needs), which `store` opens with."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from cronpilot.adapters.sql import SqlStore
from tests.integration.scheduler.processes import SchedulerProcesses, store_of


@pytest.fixture
async def store(postgres_url: str, processes: SchedulerProcesses) -> AsyncIterator[SqlStore]:
    async with store_of(postgres_url, processes) as opened:
        yield opened
