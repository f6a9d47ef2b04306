"""The tool graph's edge store."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from cronpilot.domain.graph.graph import Edge, EdgeKey, EdgeSighting, EdgeType


class GraphRepository(Protocol):
    """The tool graph's one edge store."""

    async def record(self, sightings: Sequence[EdgeSighting], now: datetime) -> None:
        """Fold each sighting into its edge (`domain.graph.graph.sighted`), in order, in one
        transaction: repeats add up, several types per pair and self-loops are kept."""
        ...

    async def list_edges(self, job: str | None = None) -> list[Edge]:
        """All edges, or those with an end in `job` (the job node or one of its endpoints),
        ordered by (from, to, type)."""
        ...

    async def retract(
        self, edge_type: EdgeType, into: Collection[str], keep: Collection[EdgeKey]
    ) -> int:
        """Delete the edges of `edge_type` ending in one of the nodes `into` that no trace has
        counted (count 0), except those keyed in `keep`: a withdrawn `depends_on`, a provides
        edge the learnt schemas no longer support. Counted edges stay: they are history.
        Returns how many were deleted."""
        ...

    async def forget(self, nodes: Collection[str]) -> int:
        """Delete every edge from or to one of `nodes`, counted or not: the nodes themselves
        are gone (deleted endpoints or jobs). Returns how many were deleted."""
        ...
