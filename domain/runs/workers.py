"""The workers registry: each scheduler worker says who it is, and that it is alive, on a
heartbeat; `cronpilot workers list` shows those heard from recently."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta

RUNS_WINDOW = timedelta(minutes=1)
"""`workers list` counts each worker's runs started within this much before now."""


@dataclass(frozen=True, slots=True)
class WorkerInfo:
    """One scheduler worker as it registers itself; `last_seen` moves on with each heartbeat."""

    id: str
    """The `worker_id` its leases and runs carry."""
    host: str
    pid: int
    version: str
    """cronpilot's version in that process: a rolling upgrade shows which workers lag."""
    started_at: datetime
    last_seen: datetime

    def seen(self, now: datetime) -> WorkerInfo:
        return replace(self, last_seen=now)


@dataclass(frozen=True, slots=True)
class WorkerActivity:
    """A registered worker and the runs it started lately (`RUNS_WINDOW`)."""

    worker: WorkerInfo
    recent_runs: int


def seen_since(now: datetime, stale_seconds: float) -> datetime:
    """The oldest heartbeat of a worker still counted alive: one silent for `stale_seconds` is
    gone (not listed, and pruned by housekeeping)."""
    return now - timedelta(seconds=stale_seconds)


def by_last_seen(activities: list[WorkerActivity]) -> list[WorkerActivity]:
    """The listing order: most recently seen first, then by id."""
    by_id = sorted(activities, key=lambda a: a.worker.id)
    return sorted(by_id, key=lambda a: a.worker.last_seen, reverse=True)
