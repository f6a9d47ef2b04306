"""The output schema as the planner shows it (`get_output_schema`, the brief), over the store's
ports only."""

from __future__ import annotations

from cronpilot.domain.graph.outputs import OutputSchema
from cronpilot.domain.model import JSON
from cronpilot.domain.ports.units import Store


def schema_document(schema: OutputSchema | None) -> dict[str, JSON] | None:
    """A learnt output schema as JSON Schema (with `x-seen` counts and `x-confidence`), or None
    before its first stored body."""
    return None if schema is None or not schema.observations else schema.json_schema()


async def read_output_schema(store: Store, endpoint_id: str) -> dict[str, JSON] | None:
    """The endpoint's learnt output schema as `schema_document` shows it."""
    return schema_document(await store.schemas.get_output_schema(endpoint_id))
