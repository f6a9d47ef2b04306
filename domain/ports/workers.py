"""The workers registry."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from cronpilot.domain.runs.workers import WorkerActivity, WorkerInfo


class WorkerRepository(Protocol):
    """The workers registry: scheduler workers register and heartbeat here."""

    async def beat(self, worker: WorkerInfo) -> None:
        """Store `worker` as it is now (insert, or replace the row of its id: a restarted
        worker that kept its id shows its new process)."""
        ...

    async def list_active(self, seen_since: datetime, runs_since: datetime) -> list[WorkerActivity]:
        """Workers last seen at or after `seen_since`, each with how many runs it started at or
        after `runs_since` (its runs by `worker_id`), in `domain.runs.workers.by_last_seen`
        order."""
        ...

    async def prune(self, seen_before: datetime) -> int:
        """Forget workers last seen before `seen_before`; returns how many."""
        ...
