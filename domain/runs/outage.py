"""How long a worker waits before it tries an unreachable store again: a blip costs a fraction of
a second, a long outage one try every few seconds."""

from __future__ import annotations

FIRST_RETRY_SECONDS = 0.2
_MAX_DOUBLINGS = 64
"""Far past any cap: keeps the power of two finite however long the outage."""


def store_retry_delay(
    failures: int, cap_seconds: float, first_seconds: float = FIRST_RETRY_SECONDS
) -> float:
    """The wait after `failures` consecutive failed tries (1 after the first): `first_seconds`,
    doubled for each further failure, at most `cap_seconds`. A success starts over at 1."""
    if failures < 1:
        raise ValueError(f"failures must be at least 1, not {failures}")
    doublings = min(failures - 1, _MAX_DOUBLINGS)
    return min(first_seconds * 2.0**doublings, cap_seconds)


def described(error: BaseException) -> str:
    """An error in one log line: its type and its message, whitespace folded (a store's error
    names the driver's error it stands for)."""
    return f"{type(error).__name__}: {' '.join(str(error).split())}"
