"""`VectorRepository` in memory: the search index's embeddings."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from cronpilot.domain.ports import StoredVector, VectorRepository

if TYPE_CHECKING:
    from tests.support.memory_store.store import MemoryState


class MemoryVectors(VectorRepository):
    def __init__(self, state: MemoryState) -> None:
        self._state = state

    async def get_vectors(self, model: str) -> dict[str, StoredVector]:
        # As the SQL foreign key's cascade: a deleted endpoint's vectors are gone.
        return {
            endpoint_id: vector
            for (endpoint_id, of), vector in self._state.vectors.items()
            if of == model and endpoint_id in self._state.endpoints
        }

    async def save_vectors(self, vectors: Sequence[StoredVector], now: datetime) -> None:
        async with self._state.lock:
            for vector in vectors:
                if vector.endpoint_id in self._state.endpoints:
                    self._state.vectors[(vector.endpoint_id, vector.model)] = vector
