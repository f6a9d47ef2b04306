"""The learnt schemas a worker keeps in memory, so that learning from a recorded run reads
nothing: its body, still in memory at the finish, is merged into its endpoint's schema as the
run is handed over (`merge`). Only a change of shape (the first body, a new field, a new type,
a field now optional, a format dropped) or of the fields found volatile (left out when answers
are compared) asks for a save at once; a merge that only adds to the schema's counts waits for
the next save of counts, minutes later.

A schema is merged in memory only while it holds every run of its endpoint up to the one
handed over: its watermark (the newest slot merged) must be the endpoint's last slot as
claimed. Otherwise (a run recorded by another worker, one never handed over, a worker that
started since) the learner learns from the store, from the watermark, and keeps what it
learnt: nothing stored is skipped or merged twice, whichever worker ran it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum

from cronpilot.domain.graph.change_detection import volatile_fields
from cronpilot.domain.graph.outputs import DriftEvent, OutputSchema, learn, learnable
from cronpilot.domain.model import Endpoint, Run

MAX_KEPT = 50_000
"""Schemas kept at most; past it the oldest is forgotten (its endpoint learns from the store
next time: its runs are stored)."""


class Merged(Enum):
    """What a run handed over asks of the learner."""

    NOTHING = "nothing"
    """Merged in memory (or nothing to learn): no store work now."""
    SAVE = "save"
    """Merged, and the shape or the volatile fields changed: the schema is to be saved now."""
    FROM_STORE = "from_store"
    """Not merged: the schema in memory lacks runs (or there is none); learn from the store."""


@dataclass(slots=True)
class Kept:
    endpoint: Endpoint
    """As last claimed: the volatile fields a save compares with."""
    schema: OutputSchema
    drift: list[DriftEvent] = field(default_factory=list)
    """Changes of shape merged since the last save."""
    reshaped: bool = False
    """The shape changed (or the first body came) since the last save."""
    due: bool = False
    """To be saved now: reshaped, or its volatile fields are not the endpoint's."""
    unsaved: bool = False
    """Bodies were merged since the last save."""


class KeptSchemas:
    def __init__(self, limit: int = MAX_KEPT) -> None:
        self._kept: dict[str, Kept] = {}
        self._limit = limit

    def merge(self, endpoint: Endpoint, run: Run, now: datetime) -> Merged:
        """Merge `run` (recorded, of `endpoint` as claimed) into the schema kept for it."""
        kept = self._kept.get(endpoint.id)
        if kept is None and endpoint.last_slot_at is None:
            # Its first run: there is nothing stored to read. Should a schema be stored all
            # the same (a schedule started afresh), the save finds it and the store is read.
            kept = self.keep(endpoint, OutputSchema(endpoint.id))
        if kept is None or kept.schema.through_slot != endpoint.last_slot_at:
            self._kept.pop(endpoint.id, None)
            return Merged.FROM_STORE if learnable(run) else Merged.NOTHING
        kept.endpoint = endpoint
        first = kept.schema.observations == 0
        drift = learn(kept.schema, (run,), now)
        if not learnable(run):
            # Only the watermark moved: nothing worth a write.
            return Merged.NOTHING
        kept.unsaved = True
        if drift or first:
            kept.drift += drift
            kept.reshaped = True
        elif volatile_fields(kept.schema.root) == endpoint.volatile_fields:
            return Merged.NOTHING
        kept.due = True
        return Merged.SAVE

    def keep(self, endpoint: Endpoint, schema: OutputSchema) -> Kept:
        """Keep `schema`, as stored, for `endpoint`'s next runs."""
        if endpoint.id not in self._kept and len(self._kept) >= self._limit:
            del self._kept[next(iter(self._kept))]
        kept = self._kept[endpoint.id] = Kept(endpoint, schema)
        return kept

    def get(self, endpoint_id: str) -> Kept | None:
        return self._kept.get(endpoint_id)

    def forget(self, endpoint_id: str) -> None:
        self._kept.pop(endpoint_id, None)

    def unsaved(self) -> list[str]:
        """The endpoints whose kept schema has merges not saved yet."""
        return [key for key, kept in self._kept.items() if kept.unsaved]
