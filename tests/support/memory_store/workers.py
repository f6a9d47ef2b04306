"""`MemoryWorkers`: the workers registry over the `MemoryState` dict."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from cronpilot.domain.ports import WorkerRepository
from cronpilot.domain.runs.workers import WorkerActivity, WorkerInfo, by_last_seen

if TYPE_CHECKING:
    from tests.support.memory_store.store import MemoryState


class MemoryWorkers(WorkerRepository):
    def __init__(self, state: MemoryState) -> None:
        self._state = state

    async def beat(self, worker: WorkerInfo) -> None:
        async with self._state.lock:
            self._state.workers[worker.id] = worker

    async def list_active(self, seen_since: datetime, runs_since: datetime) -> list[WorkerActivity]:
        active = [w for w in self._state.workers.values() if w.last_seen >= seen_since]
        return by_last_seen(
            [
                WorkerActivity(
                    worker,
                    sum(
                        1
                        for run in self._state.runs.values()
                        if run.worker_id == worker.id and run.started_at >= runs_since
                    ),
                )
                for worker in active
            ]
        )

    async def prune(self, seen_before: datetime) -> int:
        async with self._state.lock:
            gone = [w.id for w in self._state.workers.values() if w.last_seen < seen_before]
            for worker_id in gone:
                del self._state.workers[worker_id]
        return len(gone)
