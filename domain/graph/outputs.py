"""An endpoint's learnt output schema and its drift history, and how stored runs feed them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from cronpilot.domain.graph.schema_inference import (
    ShapeChange,
    ShapeNode,
    merge_document,
    to_json_schema,
)
from cronpilot.domain.model import JSON, Run, RunStatus


@dataclass(frozen=True, slots=True)
class DriftEvent:
    """A stored response whose shape differed from what the endpoint answered before."""

    endpoint_id: str
    run_id: str
    at: datetime
    changes: tuple[str, ...]


@dataclass(slots=True)
class OutputSchema:
    endpoint_id: str
    root: ShapeNode = field(default_factory=ShapeNode)
    through_slot: datetime | None = None
    """The slot of the newest run merged: later runs are still to learn from."""
    version: int = 0
    """Bumped on every save; a save is refused unless the stored version is the one read
    (two workers learning at once do not lose each other's merges)."""

    @property
    def observations(self) -> int:
        return self.root.seen

    def copy(self) -> OutputSchema:
        root = ShapeNode.from_dict(self.root.to_dict())
        return OutputSchema(self.endpoint_id, root, self.through_slot, self.version)

    def json_schema(self) -> dict[str, JSON]:
        return to_json_schema(self.root) if self.root.seen else {}


def learnable(run: Run) -> bool:
    """Runs whose body describes what the endpoint answers: successful, with a stored body."""
    return run.status is RunStatus.SUCCESS and run.body is not None


def learn(schema: OutputSchema, runs: Iterable[Run], at: datetime) -> list[DriftEvent]:
    """Merge `runs` (oldest first; unlearnable ones and those at or before `through_slot` are
    passed over) into `schema` in place; one drift event per run that changed its shape."""
    events: list[DriftEvent] = []
    for run in runs:
        if schema.through_slot is not None and run.slot_at <= schema.through_slot:
            continue
        schema.through_slot = run.slot_at
        if not learnable(run):
            continue
        changes: list[ShapeChange] = merge_document(schema.root, run.body)
        if changes:
            events.append(
                DriftEvent(schema.endpoint_id, run.id, at, tuple(str(c) for c in changes))
            )
    return events
