"""Running a worker's side task (`async def run(stop)`) for the length of a block."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from cronpilot.scheduler.worker import SideTask


@asynccontextmanager
async def running(part: SideTask) -> AsyncIterator[None]:
    """`part` runs in a task of its own until the block ends; then it is stopped and waited
    for, and its error, if any, raised."""
    stop = asyncio.Event()
    task = asyncio.create_task(part.run(stop))
    try:
        yield
    finally:
        stop.set()
        await task
