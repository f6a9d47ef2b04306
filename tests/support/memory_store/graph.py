"""Output schemas, the tool graph and DAG runs over `MemoryState`, deciding with the same
domain functions as the SQL store."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from cronpilot.domain.graph.dag import (
    DagPlan,
    DagWait,
    advance,
    changes_matter,
    dag_claim,
    dag_of,
    outcome_of,
    reading,
    ready_trigger,
    run_if_reads,
    starting,
)
from cronpilot.domain.graph.graph import (
    Edge,
    EdgeKey,
    EdgeSighting,
    EdgeType,
    retractable,
    sighted,
    touches_job,
)
from cronpilot.domain.graph.outputs import DriftEvent, OutputSchema
from cronpilot.domain.model import (
    Claim,
    DagTrigger,
    Endpoint,
    Finish,
    Recorded,
    Run,
    RunStatus,
)
from cronpilot.domain.planning.approvals import ApprovalState
from cronpilot.domain.ports import DagRepository, GraphRepository, SchemaRepository
from cronpilot.domain.rules.conditions import Response
from cronpilot.domain.runs.transitions import started_run

if TYPE_CHECKING:
    # The state is defined beside the store, which assembles these repositories.
    from tests.support.memory_store.store import MemoryState


class MemorySchemas(SchemaRepository):
    def __init__(self, state: MemoryState) -> None:
        self._state = state

    async def get_output_schema(self, endpoint_id: str) -> OutputSchema | None:
        stored = self._state.output_schemas.get(endpoint_id)
        return None if stored is None else stored.copy()

    async def get_output_schemas(self, endpoint_ids: Collection[str]) -> dict[str, OutputSchema]:
        stored = self._state.output_schemas
        return {i: stored[i].copy() for i in endpoint_ids if i in stored}

    async def save_output_schema(
        self, schema: OutputSchema, drift: Sequence[DriftEvent], now: datetime, *, rebuilt: bool
    ) -> bool:
        async with self._state.lock:
            self._state.endpoint(schema.endpoint_id)
            stored = self._state.output_schemas.get(schema.endpoint_id)
            if (stored.version if stored else 0) != schema.version:
                return False
            schema.version += 1
            self._state.output_schemas[schema.endpoint_id] = schema.copy()
            kept = [] if rebuilt else self._state.drift.get(schema.endpoint_id, [])
            self._state.drift[schema.endpoint_id] = [*kept, *drift]
        return True

    async def list_drift(self, endpoint_id: str, limit: int = 50) -> list[DriftEvent]:
        events = self._state.drift.get(endpoint_id, [])
        return list(reversed(events))[:limit]


class MemoryGraph(GraphRepository):
    def __init__(self, state: MemoryState) -> None:
        self._state = state

    async def record(self, sightings: Sequence[EdgeSighting], now: datetime) -> None:
        async with self._state.lock:
            for sighting in sightings:
                edges = self._state.edges
                edges[sighting.key] = sighted(edges.get(sighting.key), sighting, now)

    async def list_edges(self, job: str | None = None) -> list[Edge]:
        edges = sorted(self._state.edges.values(), key=lambda e: e.key)
        if job is None:
            return edges
        return [e for e in edges if touches_job(e, job)]

    async def retract(
        self, edge_type: EdgeType, into: Collection[str], keep: Collection[EdgeKey]
    ) -> int:
        async with self._state.lock:
            doomed = [
                key
                for key, edge in self._state.edges.items()
                if retractable(edge, edge_type, into, keep)
            ]
            for key in doomed:
                del self._state.edges[key]
        return len(doomed)

    async def forget(self, nodes: Collection[str]) -> int:
        gone = set(nodes)
        async with self._state.lock:
            doomed = [key for key in self._state.edges if key[0] in gone or key[1] in gone]
            for key in doomed:
                del self._state.edges[key]
        return len(doomed)


def advance_dag(state: MemoryState, finish: Finish, run: Run) -> Recorded:
    """Report `run`, just recorded for `finish`, to its endpoint's dependants
    (`domain.graph.dag.advance`) and start those now ready; the lock held by the caller
    (`MemoryClaims.finish_many`)."""
    claim, worker_id, now = finish.claim, finish.worker_id, finish.now
    endpoint = state.endpoint(claim.endpoint.id)
    dag = dag_of(claim.dag, run, endpoint)
    job = [e for e in state.endpoints.values() if e.job_id == endpoint.job_id]
    waits = dag_run_waits(state, dag[0])
    earlier = (r for r in state.runs_of(endpoint.id) if r.slot_at < run.slot_at)
    previous = (
        next((r for r in earlier if r.status is RunStatus.SUCCESS), None)
        if changes_matter(endpoint, job)
        else None
    )
    outcome = outcome_of(run, previous, endpoint)
    responses = _responses(state, job, run_if_reads(job, waits, endpoint, run), run)
    gated = {a.endpoint_id for a in state.approvals.values() if a.state is ApprovalState.PENDING}
    plan = advance(
        job,
        waits,
        endpoint,
        outcome,
        dag=dag,
        worker_id=worker_id,
        now=now,
        responses=responses,
        gated=gated,
    )
    started = _carry_out(state, plan, (worker_id, finish.lease_seconds), now)
    return Recorded(run, started, tuple(plan.skips), tuple(plan.approvals))


def _responses(
    state: MemoryState, job: list[Endpoint], reads: dict[str, str | None], run: Run
) -> dict[str, Response]:
    """The responses `run_if_reads` named: `run` itself, the other runs of the DAG run, and the
    latest successful run of a parent not in it."""
    found: dict[str, Response] = {}
    for name, run_id in reads.items():
        if run_id is None:
            parent = next(e for e in job if e.name == name)
            successes = (r for r in state.runs_of(parent.id) if r.status is RunStatus.SUCCESS)
            read = next(successes, None)
        else:
            read = run if run_id == run.id else state.runs.get(run_id)
        if read is not None:
            found[name] = reading(read)
    return found


def dag_run_waits(state: MemoryState, dag_run_id: str) -> dict[str, DagWait]:
    """The open waits of one DAG run, by endpoint id."""
    return {w.endpoint_id: w for (d, _), w in state.waits.items() if d == dag_run_id}


def save_plan(state: MemoryState, plan: DagPlan) -> None:
    """Write what `plan` decided but the starts (as `adapters.sql.dag_repo.save_plan`)."""
    for wait in plan.waiting.values():
        state.waits[(wait.dag_run_id, wait.endpoint_id)] = wait
    for wait in plan.finished:
        state.waits.pop((wait.dag_run_id, wait.endpoint_id), None)
    for skipped in plan.skipped:
        state.runs[skipped.id] = skipped
    for approval in plan.approvals:
        state.approvals[approval.id] = approval
    state.add_notifications(plan.notifications)


def _carry_out(
    state: MemoryState, plan: DagPlan, lease: tuple[str, float], now: datetime
) -> list[Claim]:
    save_plan(state, plan)
    starts, ready = starting(plan)
    for wait in ready:
        state.waits[(wait.dag_run_id, wait.endpoint_id)] = wait
    return [_start(state, node, trigger, lease, now) for node, trigger in starts]


def _start(
    state: MemoryState,
    endpoint: Endpoint,
    trigger: DagTrigger,
    lease: tuple[str, float],
    now: datetime,
) -> Claim:
    bodies = {
        name: state.runs[run_id].body
        for name, run_id in trigger.parents.items()
        if run_id in state.runs
    }
    claim = dag_claim(endpoint, trigger, bodies, lease, now)
    state.endpoints[endpoint.id] = claim.endpoint
    state.runs[claim.run_id] = started_run(claim, lease[0], now)
    return claim


class MemoryDag(DagRepository):
    def __init__(self, state: MemoryState) -> None:
        self._state = state

    async def claim_ready(
        self, now: datetime, worker_id: str, lease_seconds: float, limit: int
    ) -> list[Claim]:
        claims: list[Claim] = []
        async with self._state.lock:
            for key, wait in sorted(self._state.waits.items()):
                endpoint = self._state.endpoints.get(wait.endpoint_id)
                if len(claims) >= limit or not wait.ready or wait.parent_trace_id is None:
                    continue
                if endpoint is None or endpoint.lease_owner is not None:
                    continue
                del self._state.waits[key]
                trigger = ready_trigger(wait)
                claims.append(
                    _start(self._state, endpoint, trigger, (worker_id, lease_seconds), now)
                )
        return claims

    async def add_ready(self, wait: DagWait) -> None:
        async with self._state.lock:
            self._state.waits[(wait.dag_run_id, wait.endpoint_id)] = wait

    async def list_waits(self) -> list[DagWait]:
        return [wait for _, wait in sorted(self._state.waits.items())]

    async def drop_stale_waits(self, created_before: datetime) -> int:
        async with self._state.lock:
            held = {
                (a.dag_run_id, a.endpoint_id)
                for a in self._state.approvals.values()
                if a.state is ApprovalState.PENDING
            }
            stale = [
                k
                for k, w in self._state.waits.items()
                if w.created_at < created_before and k not in held
            ]
            for key in stale:
                del self._state.waits[key]
        return len(stale)

    async def trace_neighbours(self, run: Run) -> tuple[Run | None, Run | None]:
        if run.parent_trace_id is None:
            return None, None
        runs = self._state.runs.values()
        parent = next((r for r in runs if r.trace_id == run.parent_trace_id), None)
        earlier = [
            r
            for r in runs
            if r.parent_trace_id == run.parent_trace_id
            and (r.started_at, r.id) < (run.started_at, run.id)
        ]
        return parent, max(earlier, key=lambda r: (r.started_at, r.id), default=None)
