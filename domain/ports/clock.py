"""Time and wake-ups: the clock every part reads its time from, and the waker that cuts a
scheduler's sleep short when an endpoint becomes due earlier."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait `seconds` of this clock's time (a fake clock advances instead of waiting)."""
        ...


class Waker(Protocol):
    """Wakes sleeping schedulers when an endpoint becomes due earlier than they planned."""

    async def notify(self) -> None:
        """Wake every scheduler sharing the store (other processes too, where the store allows)."""
        ...

    async def wait(self, timeout: float) -> bool:
        """Sleep up to `timeout` seconds; True if woken by `notify`, False on timeout."""
        ...

    async def close(self) -> None: ...
