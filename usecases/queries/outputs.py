"""What cronpilot learnt of an endpoint's responses: its output schema and drift events."""

from __future__ import annotations

from dataclasses import dataclass

from cronpilot.domain.access.access import EVERY_JOB, Reach
from cronpilot.domain.graph.change_detection import marked_schema
from cronpilot.domain.graph.outputs import DriftEvent, OutputSchema
from cronpilot.domain.model import JSON, Endpoint
from cronpilot.domain.ports import ReadingFactory
from cronpilot.usecases.queries.reach import reached_endpoint


@dataclass(frozen=True, slots=True)
class LearntOutput:
    endpoint: Endpoint
    schema: OutputSchema | None
    """None before its first stored body."""
    drift: list[DriftEvent]
    """Newest first."""

    def json_schema(self) -> dict[str, JSON]:
        """The learnt JSON Schema ({} before the first body), the fields change detection
        leaves out marked (`x-volatile`, `x-change-ignored`)."""
        if self.schema is None:
            return {}
        return marked_schema(self.schema.json_schema(), self.endpoint)


async def show_output(
    reading: ReadingFactory, ref: str, drift_limit: int = 50, *, reach: Reach = EVERY_JOB
) -> LearntOutput:
    """Raises `EndpointNotFound`."""
    async with reading() as read:
        endpoint = await reached_endpoint(read, ref, reach)
        schema = await read.schemas.get_output_schema(endpoint.id)
        drift = await read.schemas.list_drift(endpoint.id, limit=drift_limit)
    return LearntOutput(endpoint, schema, drift)
