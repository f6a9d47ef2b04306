"""Fixtures of the tests that run scheduler processes on one PostgreSQL: a loopback endpoint
server and the store the processes write. Each module declares its own `processes` (the
settings its story needs), which `store` opens with."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from cronpilot.adapters.sql import SqlStore
from tests.integration.scheduler.endpoint_server import EndpointServer
from tests.integration.scheduler.processes import SchedulerProcesses, store_of


@pytest.fixture
async def server() -> AsyncIterator[EndpointServer]:
    async with EndpointServer() as running:
        yield running


@pytest.fixture
async def store(postgres_url: str, processes: SchedulerProcesses) -> AsyncIterator[SqlStore]:
    async with store_of(postgres_url, processes) as opened:
        yield opened
