"""The peers cronpilot is measured against, making the same calls to the same server: a bare
aiohttp client (the ceiling: no scheduling, nothing stored) and APScheduler 3.11, with its
in-memory job store and with its SQLAlchemy job store on PostgreSQL.

Each returns how many calls completed and how long they took, from the moment every call was
due until the last one returned.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import aiohttp
from apscheduler.jobstores.base import BaseJobStore
from apscheduler.jobstores.memory import MemoryJobStore
from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
from apscheduler.schedulers.asyncio import AsyncIOScheduler


@dataclass(frozen=True, slots=True)
class Measured:
    calls: int
    seconds: float
    cpu_seconds: float
    """CPU time of this process (every thread) over the same span: unlike `seconds`, it
    hardly moves when other work shares the machine."""

    @property
    def per_second(self) -> float:
        return self.calls / self.seconds if self.seconds > 0 else float("nan")

    @property
    def cpu_us_per_call(self) -> float:
        return self.cpu_seconds / self.calls * 1e6 if self.calls else float("nan")


async def bare_aiohttp(urls: Sequence[str], concurrency: int) -> Measured:
    """`concurrency` callers sharing one session work through `urls`, reading every body."""
    pending = iter(urls)
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def caller() -> int:
            made = 0
            for url in pending:
                async with session.get(url) as response:
                    await response.read()
                made += 1
            return made

        started, cpu = time.monotonic(), time.process_time()
        made = await asyncio.gather(*(caller() for _ in range(concurrency)))
        return Measured(sum(made), time.monotonic() - started, time.process_time() - cpu)


class _Calls:
    """What the APScheduler jobs share. Jobs in a persistent store are pickled by reference, so
    they reach the session through this module rather than through their arguments."""

    session: aiohttp.ClientSession | None = None
    made = 0
    all_made = asyncio.Event()
    wanted = 0


async def call_endpoint(url: str) -> None:
    """The APScheduler job: the same GET as cronpilot's, body read."""
    assert _Calls.session is not None
    async with _Calls.session.get(url) as response:
        await response.read()
    _Calls.made += 1
    if _Calls.made >= _Calls.wanted:
        _Calls.all_made.set()


async def apscheduler(
    urls: Sequence[str], concurrency: int, store: BaseJobStore, deadline_seconds: float
) -> Measured:
    """One date job per URL, all due before the scheduler is resumed; stops at the deadline
    when the store is too slow to get through them."""
    _Calls.made, _Calls.wanted, _Calls.all_made = 0, len(urls), asyncio.Event()
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        _Calls.session = session
        scheduler = AsyncIOScheduler(timezone=UTC, jobstores={"default": store})
        scheduler.start(paused=True)
        due = datetime.now(UTC)
        for n, url in enumerate(urls):
            scheduler.add_job(
                call_endpoint,
                "date",
                run_date=due,
                args=[url],
                id=f"call-{n}",
                misfire_grace_time=None,
            )
        started, cpu = time.monotonic(), time.process_time()
        scheduler.resume()
        try:
            async with asyncio.timeout(deadline_seconds):
                await _Calls.all_made.wait()
        except TimeoutError:
            pass
        elapsed, cpu = time.monotonic() - started, time.process_time() - cpu
        made = _Calls.made
        scheduler.shutdown(wait=False)
        await asyncio.sleep(0)
        _Calls.session = None
    return Measured(made, elapsed, cpu)


def memory_store() -> BaseJobStore:
    return MemoryJobStore()


def sqlalchemy_store(sync_url: str) -> BaseJobStore:
    return SQLAlchemyJobStore(url=sync_url)
