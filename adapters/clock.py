"""The real clock: wall time in UTC and asyncio's sleep."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from cronpilot.domain.ports import Clock


class SystemClock(Clock):
    """`domain.ports.Clock` backed by the system clock."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
