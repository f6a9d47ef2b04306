"""The search index: embeddings stored per endpoint and model, and the model that makes them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol


@dataclass(frozen=True, slots=True)
class StoredVector:
    """An endpoint's embedding by one model, and the digest of the text it was made from."""

    endpoint_id: str
    model: str
    digest: str
    vector: Sequence[float]
    """A store may hand back a compact sequence (SQL: `array('f')` over the stored bytes, not
    a tuple of Python floats, 30 times slower to make for a catalog's worth)."""


class VectorRepository(Protocol):
    """The search index's embeddings, one per endpoint and model."""

    async def get_vectors(self, model: str) -> dict[str, StoredVector]:
        """The vectors made by `model`, by endpoint id (deleted endpoints' are gone)."""
        ...

    async def save_vectors(self, vectors: Sequence[StoredVector], now: datetime) -> None:
        """Insert or replace each vector (by endpoint and model). Unknown endpoints are
        skipped: one deleted meanwhile has nothing left to find."""
        ...


class Embedder(Protocol):
    """Turns texts into vectors that are close when the texts mean alike."""

    @property
    def model(self) -> str:
        """Names the model: vectors of two models are never compared."""
        ...

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order. Raises `EmbedderUnavailable` when the model cannot
        be loaded or reached."""
        ...
