"""The SQL store's group commit, around a database that fails in ways no real one is asked to."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any, cast

import pytest

from cronpilot.adapters.sql.engine import Database
from cronpilot.adapters.sql.finishes import FinishBatcher
from cronpilot.domain.model import Claim, Endpoint, EndpointSpec, Response, Schedule, ScheduleSource

NOW = datetime(2030, 1, 1, tzinfo=UTC)


class BrokenDatabase:
    """Every transaction fails with a bug's exception (not a translated store error)."""

    def __init__(self) -> None:
        self.transactions = 0

    @asynccontextmanager
    async def write(self) -> AsyncIterator[Any]:
        self.transactions += 1
        raise RuntimeError("a bug in the recording code")
        yield


def _claim(name: str) -> Claim:
    spec = EndpointSpec(name, f"https://example.com/{name}", Schedule(interval_seconds=60))
    endpoint = Endpoint(id=name, job_id="j", job_name="j", spec=spec, next_run_at=NOW)
    return Claim(endpoint, f"run-{name}", NOW, f"trace-{name}", NOW, ScheduleSource.BASELINE)


async def test_an_unexpected_error_reaches_every_waiting_caller_instead_of_hanging_them() -> None:
    database = BrokenDatabase()
    batcher = FinishBatcher(cast(Database, database))

    async with asyncio.timeout(5):
        outcomes = await asyncio.gather(
            *(batcher.finish(_claim(name), "w1", Response(200), NOW) for name in "abc"),
            return_exceptions=True,
        )

    assert [type(outcome) for outcome in outcomes] == [RuntimeError] * 3
    assert database.transactions == 1
    with pytest.raises(RuntimeError):
        async with asyncio.timeout(5):
            await batcher.finish(_claim("d"), "w1", Response(200), NOW)
