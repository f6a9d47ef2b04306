"""Loading generated states into any store, and emptying it again, for the rule contract tests
(`test_rules_contract.py`): one store serves every hypothesis example of a test.

States are written as they are, past the repositories' use cases (a lease of another worker, a
planner state mid-backoff): arranging a state, not changing how the store behaves."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import delete, insert, update

from cronpilot.adapters.sql import SqlStore
from cronpilot.adapters.sql.limits_claim import limit_state_values
from cronpilot.adapters.sql.notifications_repo import add_notifications
from cronpilot.adapters.sql.planner_rows import proposal_values
from cronpilot.adapters.sql.rows import run_values, save_endpoint_states
from cronpilot.adapters.sql.tables import (
    limits,
    metadata,
    planner_state,
    proposals,
    run_queue,
    runs,
)
from cronpilot.domain.alerts.alerts import Notification
from cronpilot.domain.model import Endpoint, Run
from cronpilot.domain.planning.planning import PlannerState, Proposal
from cronpilot.domain.ports import Store
from cronpilot.domain.schedule.limits import LimitState
from tests.support.memory_store import MemoryStore
from tests.support.memory_store.planner import MemoryPlannerState


async def empty(store: Store) -> None:
    """Forget every row: the store as a fresh one."""
    if isinstance(store, MemoryStore):
        state = store.state
        for table in (state.jobs, state.endpoints, state.runs, state.notifications, state.limits):
            table.clear()
        store.planner.planning = MemoryPlannerState()
        return
    assert isinstance(store, SqlStore)
    async with store.engine.begin() as conn:
        for table in reversed(metadata.sorted_tables):
            await conn.execute(delete(table))


async def load(
    store: Store,
    *,
    endpoints: Sequence[Endpoint] = (),
    history: Sequence[Run] = (),
    planner_states: Sequence[PlannerState] = (),
    pending: Sequence[Proposal] = (),
    outbox: Sequence[Notification] = (),
    limit_states: Sequence[LimitState] = (),
) -> None:
    """Write the runtime state of declared `endpoints`, runs, planner states, proposals,
    notifications and what claims recorded on declared limits."""
    if isinstance(store, MemoryStore):
        store.state.endpoints.update((e.id, e) for e in endpoints)
        store.state.runs.update((run.id, run) for run in history)
        store.planner.planning.states.update((s.endpoint_id, s) for s in planner_states)
        store.planner.planning.proposals.update((p.id, p) for p in pending)
        store.state.add_notifications(outbox)
        store.state.limits.update((state.key, state) for state in limit_states)
        return
    assert isinstance(store, SqlStore)
    async with store.engine.begin() as conn:
        if endpoints:
            await save_endpoint_states(conn, endpoints)
        if history:
            for table in (runs, run_queue):
                rows = [
                    run_values(run) for run in history if run.status.finished == (table is runs)
                ]
                if rows:
                    await conn.execute(insert(table), rows)
        if planner_states:
            await conn.execute(
                insert(planner_state),
                [
                    {
                        "endpoint_id": s.endpoint_id,
                        "seen_slot_at": s.seen_slot_at,
                        "seen_failing": s.seen_failing,
                        "next_analysis_at": s.next_analysis_at,
                        "llm_failures": s.llm_failures,
                        "retry_at": s.retry_at,
                        "lease_owner": s.lease_owner,
                        "lease_until": s.lease_until,
                        "rules_seen_slot_at": s.rules_seen_slot_at,
                        "rule_held": s.rule_held,
                    }
                    for s in planner_states
                ],
            )
        if pending:
            await conn.execute(insert(proposals), [proposal_values(p) for p in pending])
        await add_notifications(conn, outbox, None)
        for state in limit_states:
            await conn.execute(
                update(limits).where(limits.c.key == state.key).values(limit_state_values(state))
            )
