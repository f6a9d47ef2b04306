"""Learnt output schemas and their drift."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from cronpilot.domain.graph.outputs import DriftEvent, OutputSchema


class SchemaRepository(Protocol):
    """Learnt output schemas and their drift history."""

    async def get_output_schema(self, endpoint_id: str) -> OutputSchema | None:
        """The endpoint's output schema as learnt so far, or None before its first body."""
        ...

    async def get_output_schemas(self, endpoint_ids: Collection[str]) -> dict[str, OutputSchema]:
        """The output schemas learnt so far of those of `endpoint_ids` that have stored a body,
        by endpoint id; unknown ids are left out. A job's worth in one call, not one each."""
        ...

    async def save_output_schema(
        self, schema: OutputSchema, drift: Sequence[DriftEvent], now: datetime, *, rebuilt: bool
    ) -> bool:
        """Store `schema` and append `drift`, only if the stored version is still
        `schema.version` (none stored counts as 0); then bump `schema.version`. False, and
        nothing written, if another writer got there first. `rebuilt` replaces the drift
        history instead of appending to it. Raises `EndpointNotFound` for an unknown endpoint."""
        ...

    async def list_drift(self, endpoint_id: str, limit: int = 50) -> list[DriftEvent]:
        """Drift events of one endpoint, newest first."""
        ...
