"""Deleting endpoints from the memory store with everything recorded of them, as the SQL
store's cascading foreign keys do."""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

from tests.support.memory_store.planner import MemoryPlannerState

if TYPE_CHECKING:
    from tests.support.memory_store.store import MemoryState


def delete_endpoints(
    state: MemoryState, planning: MemoryPlannerState, endpoint_ids: Collection[str]
) -> None:
    """The caller holds the store's lock."""
    doomed = set(endpoint_ids)
    for endpoint_id in doomed:
        state.endpoints.pop(endpoint_id, None)
        state.output_schemas.pop(endpoint_id, None)
        state.drift.pop(endpoint_id, None)
        planning.states.pop(endpoint_id, None)
    state.runs = {k: r for k, r in state.runs.items() if r.endpoint_id not in doomed}
    state.waits = {k: w for k, w in state.waits.items() if k[1] not in doomed}
    state.notifications = {
        k: n for k, n in state.notifications.items() if n.endpoint_id not in doomed
    }
    state.approvals = {k: a for k, a in state.approvals.items() if a.endpoint_id not in doomed}
    state.episodes = {k: e for k, e in state.episodes.items() if e.endpoint_id not in doomed}
    planning.proposals = {
        k: p for k, p in planning.proposals.items() if p.endpoint_id not in doomed
    }
    planning.sessions = {k: s for k, s in planning.sessions.items() if s.endpoint_id not in doomed}
