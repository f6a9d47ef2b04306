"""`MemoryStore`: the repositories over plain dicts, applying `domain.runs.transitions` exactly as
the SQL store does. One lock stands in for the database's transactions (`TaskLock`: a unit of
work holds it while its repositories take it again); tests may inspect `store.state` directly."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import date, datetime, timedelta
from types import TracebackType
from typing import Any, Self

from cronpilot.domain.access.audit import AuditEntry
from cronpilot.domain.access.tokens import ApiToken, ConsoleSession
from cronpilot.domain.alerts import alert_holding
from cronpilot.domain.alerts.alerts import Notification
from cronpilot.domain.errors import (
    CronpilotError,
    EndpointNotFound,
    JobNotFound,
    LeaseLost,
    ReadOnlyUnit,
    RunNotFound,
)
from cronpilot.domain.graph.dag import DagWait
from cronpilot.domain.graph.graph import Edge, EdgeType
from cronpilot.domain.graph.outputs import DriftEvent, OutputSchema
from cronpilot.domain.ids import by_id_or_prefix
from cronpilot.domain.model import (
    Claim,
    Endpoint,
    ErrorKind,
    Finish,
    Job,
    Pause,
    Recorded,
    Run,
    RunStatus,
    new_id,
)
from cronpilot.domain.paging import Cursor, follows
from cronpilot.domain.planning.approvals import Approval
from cronpilot.domain.ports import (
    Applied,
    CatalogFigures,
    CatalogRepository,
    ClaimRepository,
    ReadingUnit,
    Repositories,
    RunFilter,
    RunRepository,
    Store,
    StoredJob,
    StoredVector,
    UnitOfWork,
)
from cronpilot.domain.runs.cancelling import cancelled_run
from cronpilot.domain.runs.claiming import (
    hint_active,
    is_due,
    lease_expired,
    leased,
    next_due,
    pick_claims,
    run_lease_expired,
)
from cronpilot.domain.runs.settling import settle_batch
from cronpilot.domain.runs.transitions import (
    abandoned_run,
    after_reap,
    after_run,
    after_slot,
    caught_up,
    claim_of,
    job_resumed,
    queued_claim,
    runs_alone,
    started_queued,
    started_run,
)
from cronpilot.domain.runs.watch import WatchEpisode, caught_up_missed, caught_up_notifications
from cronpilot.domain.runs.workers import WorkerInfo
from cronpilot.domain.schedule.limits import (
    LimitState,
    LimitStatus,
    calls_in_flight,
    decide_limits,
    limited_candidates,
)
from cronpilot.domain.schedule.overlap import claimed_alone, given_back
from cronpilot.domain.schedule.time_range import falls_in
from tests.support.memory_store.access import MemoryAccess
from tests.support.memory_store.approvals import MemoryApprovals
from tests.support.memory_store.deletion import delete_endpoints
from tests.support.memory_store.graph import MemoryDag, MemoryGraph, MemorySchemas, advance_dag
from tests.support.memory_store.notifications import MemoryNotifications
from tests.support.memory_store.planner import MemoryPlanner, MemoryPlannerState
from tests.support.memory_store.vectors import MemoryVectors
from tests.support.memory_store.workers import MemoryWorkers


class TaskLock:
    """An `asyncio.Lock` that the task holding it may take again: a unit of work holds the
    store's lock for its whole block, and the repositories it calls take it per method as they
    do outside a unit. Other tasks wait as for any lock. Held for reading (a `ReadingUnit`),
    the holder may not take it again: only writes take it, so that refuses them."""

    def __init__(self) -> None:
        self._lock = asyncio.Lock()
        self._owner: asyncio.Task[Any] | None = None
        self._depth = 0
        self._reading = False

    async def acquire(self, *, reading: bool = False) -> None:
        task = asyncio.current_task()
        if self._owner is not task or task is None:
            await self._lock.acquire()
            self._owner = task
            self._reading = reading
        elif self._reading:
            raise ReadOnlyUnit
        self._depth += 1

    def release(self) -> None:
        self._depth -= 1
        if self._depth == 0:
            self._owner = None
            self._reading = False
            self._lock.release()

    async def __aenter__(self) -> None:
        await self.acquire()

    async def __aexit__(self, *_: object) -> None:
        self.release()


@dataclass
class MemoryState:
    jobs: dict[str, Job] = field(default_factory=dict)
    """By job name."""
    endpoints: dict[str, Endpoint] = field(default_factory=dict)
    """By endpoint id."""
    runs: dict[str, Run] = field(default_factory=dict)
    """By run id."""
    lock: TaskLock = field(default_factory=TaskLock)
    output_schemas: dict[str, OutputSchema] = field(default_factory=dict)
    """By endpoint id."""
    drift: dict[str, list[DriftEvent]] = field(default_factory=dict)
    """By endpoint id, oldest first."""
    edges: dict[tuple[str, str, EdgeType], Edge] = field(default_factory=dict)
    waits: dict[tuple[str, str], DagWait] = field(default_factory=dict)
    """By (DAG run id, endpoint id)."""
    notifications: dict[str, Notification] = field(default_factory=dict)
    """The alerts outbox, by notification id."""
    workers: dict[str, WorkerInfo] = field(default_factory=dict)
    """The workers registry, by worker id."""
    tokens: dict[str, ApiToken] = field(default_factory=dict)
    """API tokens, revoked ones included, by token id."""
    console_sessions: dict[str, ConsoleSession] = field(default_factory=dict)
    """Signed-in console browsers, by the hash of their cookie's id."""
    audit: list[AuditEntry] = field(default_factory=list)
    """The audit log, in the order written."""
    approvals: dict[str, Approval] = field(default_factory=dict)
    """Approval gates, by approval id."""
    vectors: dict[tuple[str, str], StoredVector] = field(default_factory=dict)
    """The search index's embeddings, by (endpoint id, model)."""
    episodes: dict[str, WatchEpisode] = field(default_factory=dict)
    """Alert episodes (`domain.runs.watch`), by episode id."""
    limits: dict[str, LimitState] = field(default_factory=dict)
    """Limits per target (`domain.schedule.limits`), by key."""

    def runs_of(self, endpoint_id: str) -> list[Run]:
        """Runs of one endpoint, newest slot first."""
        mine = [run for run in self.runs.values() if run.endpoint_id == endpoint_id]
        return sorted(mine, key=lambda run: run.slot_at, reverse=True)

    def newest_finished_slot(self, job_id: str) -> datetime | None:
        finished = [
            r.slot_at for r in self.runs.values() if r.job_id == job_id and r.status.finished
        ]
        return max(finished, default=None)

    def runs_running(self) -> list[Run]:
        return [run for run in self.runs.values() if run.status is RunStatus.RUNNING]

    def endpoint(self, endpoint_id: str) -> Endpoint:
        try:
            return self.endpoints[endpoint_id]
        except KeyError:
            raise EndpointNotFound(endpoint_id) from None

    def fenced(self, claim: Claim, worker_id: str) -> tuple[Endpoint, Run] | None:
        """As in the SQL store: our lease (unless the run holds its own) and our claim's run
        still running."""
        endpoint = self.endpoints.get(claim.endpoint.id)
        run = self.runs.get(claim.run_id)
        if endpoint is None or (endpoint.lease_owner != worker_id and not runs_alone(claim)):
            return None
        if run is None or run.status is not RunStatus.RUNNING:
            return None
        return endpoint, run

    def add_notifications(self, raised: Sequence[Notification]) -> None:
        if alert_holding.may_hold(raised):
            raised = alert_holding.held(raised, self.endpoints)
        for notification in raised:
            self.notifications[notification.id] = notification

    def add_episode(self, episode: WatchEpisode, raised: Sequence[Notification]) -> bool:
        """As the SQL store's unique keys: none of the same subject, kind and start, nor one
        of the same subject and kind still open; then `raised` too. The caller holds the lock."""
        for held in self.episodes.values():
            same = (held.subject, held.kind) == (episode.subject, episode.kind)
            if same and (held.started_at == episode.started_at or held.recovered_at is None):
                return False
        self.episodes[episode.id] = episode
        self.add_notifications(raised)
        return True

    def endpoint_by_ref(self, ref: str) -> Endpoint:
        """By id (or a unique prefix of one) or by `job/endpoint`."""
        if "/" in ref:
            for endpoint in self.endpoints.values():
                if endpoint.ref == ref:
                    return endpoint
            raise EndpointNotFound(ref)
        found = by_id_or_prefix("endpoint", ref, self.endpoints)
        if found is None:
            raise EndpointNotFound(ref)
        return found


class MemoryCatalog(CatalogRepository):
    def __init__(self, state: MemoryState, planning: MemoryPlannerState) -> None:
        self._state = state
        self._planning = planning

    async def declared_jobs(self, names: Collection[str]) -> list[StoredJob]:
        # A unit of work holds the store's lock for its whole block: nothing left to hold.
        found = [self._state.jobs[name] for name in names if name in self._state.jobs]
        endpoints = sorted(self._state.endpoints.values(), key=lambda e: e.name)
        return [StoredJob(job, [e for e in endpoints if e.job_id == job.id]) for job in found]

    async def save_applied(self, applied: Applied) -> None:
        async with self._state.lock:
            for job in applied.new_jobs + applied.changed_jobs:
                self._state.jobs[job.name] = job
            for endpoint in applied.new_endpoints + applied.changed_endpoints:
                self._state.endpoints[endpoint.id] = endpoint
            for bounds in applied.limits:
                stored = self._state.limits.get(bounds.key)
                fresh = LimitState(bounds) if stored is None else replace(stored, limit=bounds)
                self._state.limits[bounds.key] = fresh

    async def limits(self) -> list[LimitStatus]:
        flight = calls_in_flight(self._state.endpoints, self._state.runs_running())
        return [
            LimitStatus(state, flight.get(key, 0))
            for key, state in sorted(self._state.limits.items())
        ]

    async def list_jobs(self) -> list[Job]:
        return sorted(self._state.jobs.values(), key=lambda job: job.name)

    async def figures(self, now: datetime) -> CatalogFigures:
        endpoints = self._state.endpoints.values()
        queued = (run for run in self._state.runs.values() if run.status is RunStatus.QUEUED)
        return CatalogFigures(
            due=sum(is_due(endpoint, now) for endpoint in endpoints),
            queued_due=sum(run.due_at is not None and run.due_at <= now for run in queued),
            hints_active=sum(hint_active(endpoint, now) for endpoint in endpoints),
        )

    async def get_job(self, name: str) -> Job:
        try:
            return self._state.jobs[name]
        except KeyError:
            raise JobNotFound(name) from None

    async def list_endpoints(self, job_name: str | None = None) -> list[Endpoint]:
        chosen = [
            e for e in self._state.endpoints.values() if job_name is None or e.job_name == job_name
        ]
        return sorted(chosen, key=lambda e: (e.job_name, e.name))

    async def get_endpoint(self, ref: str, *, for_update: bool = False) -> Endpoint:
        # A unit of work holds the store's lock for its whole block: `for_update` has nothing
        # left to hold.
        return self._state.endpoint_by_ref(ref)

    async def save_schedule(self, endpoint: Endpoint) -> None:
        async with self._state.lock:
            stored = self._state.endpoint(endpoint.id)
            # The declared spec stays as stored, as the SQL stores' state columns leave it.
            self._state.endpoints[endpoint.id] = replace(endpoint, spec=stored.spec)

    async def set_job_pause(self, name: str, pause: Pause | None, now: datetime) -> Job:
        async with self._state.lock:
            job = replace(await self.get_job(name), pause=pause)
            self._state.jobs[name] = job
            for endpoint in list(self._state.endpoints.values()):
                if endpoint.job_id == job.id:
                    kept = endpoint if pause is not None else job_resumed(endpoint, now)
                    self._state.endpoints[endpoint.id] = replace(kept, job_pause=pause)
        return job

    async def set_volatile_fields(self, endpoint_id: str, fields: Sequence[str]) -> None:
        await self._change(endpoint_id, lambda e: replace(e, volatile_fields=tuple(fields)))

    async def delete_endpoints(self, endpoint_ids: Collection[str]) -> None:
        async with self._state.lock:
            delete_endpoints(self._state, self._planning, endpoint_ids)

    async def delete_job(self, name: str) -> None:
        async with self._state.lock:
            job = await self.get_job(name)
            owned = [e.id for e in self._state.endpoints.values() if e.job_id == job.id]
            delete_endpoints(self._state, self._planning, owned)
            del self._state.jobs[name]

    async def _change(self, endpoint_id: str, change: Callable[[Endpoint], Endpoint]) -> Endpoint:
        async with self._state.lock:
            changed = change(self._state.endpoint(endpoint_id))
            self._state.endpoints[endpoint_id] = changed
        return changed


class MemoryClaims(ClaimRepository):
    def __init__(self, state: MemoryState) -> None:
        self._state = state

    def _within_limits(
        self, waiting: Sequence[Run], due_by: datetime, limit: int, now: datetime
    ) -> dict[str, Endpoint]:
        """The endpoints a claim may take as far as their limits say (`decide_limits`), the
        keys' states stored."""
        endpoints = self._state.endpoints
        candidates = limited_candidates(endpoints.values(), waiting, due_by, now)
        flight = calls_in_flight(endpoints, self._state.runs_running())
        decision = decide_limits(candidates, self._state.limits, flight, limit, now)
        for state in decision.changed:
            self._state.limits[state.key] = state
        return {
            id_: e
            for id_, e in endpoints.items()
            if e.spec.limit is None or id_ in decision.allowed
        }

    async def claim_due(
        self,
        now: datetime,
        worker_id: str,
        lease_seconds: float,
        limit: int,
        due_by: datetime | None = None,
    ) -> list[Claim]:
        lease_until = now + timedelta(seconds=lease_seconds)
        horizon = now if due_by is None else max(now, due_by)
        claims: list[Claim] = []
        async with self._state.lock:
            waiting = [run for run in self._state.runs.values() if run.status is RunStatus.QUEUED]
            pick = pick_claims(
                self._within_limits(waiting, horizon, limit, now), waiting, horizon, limit, now
            )
            for queued in pick.queued:
                endpoint = leased(self._state.endpoints[queued.endpoint_id], worker_id, lease_until)
                self._state.endpoints[endpoint.id] = endpoint
                self._state.runs[queued.id] = started_queued(queued, worker_id, now)
                claims.append(queued_claim(endpoint, queued, lease_until))
            for planned in pick.slots:
                # As in the SQL store: a missed baseline slot moves by its catch-up rule.
                endpoint = caught_up(planned, now) or planned
                missed = None if endpoint is planned else caught_up_missed(planned, now)
                if missed is not None:
                    told = caught_up_notifications(missed, planned, now)
                    self._state.add_episode(missed, told)
                self._state.endpoints[endpoint.id] = endpoint
                if not is_due(endpoint, horizon):
                    continue
                slot = endpoint.next_slot
                assert slot is not None
                if any(run.slot_at == slot for run in self._state.runs_of(endpoint.id)):
                    # Same rule as the SQL store: a slot that already ran is planned past.
                    self._state.endpoints[endpoint.id] = after_slot(endpoint, slot, None, now)
                    continue
                claim = claim_of(
                    leased(endpoint, worker_id, lease_until), new_id(), new_id(), lease_until
                )
                # As in the SQL store: a run alone leaves its endpoint free, planned past it.
                self._state.endpoints[endpoint.id] = (
                    claimed_alone(endpoint, slot, now) if runs_alone(claim) else claim.endpoint
                )
                self._state.runs[claim.run_id] = started_run(claim, worker_id, now)
                claims.append(claim)
        return claims

    async def enqueue(self, queued: Sequence[Run]) -> list[Run]:
        inserted = []
        async with self._state.lock:
            for run in queued:
                self._state.endpoint(run.endpoint_id)
                if any(r.slot_at == run.slot_at for r in self._state.runs_of(run.endpoint_id)):
                    continue
                self._state.runs[run.id] = run
                inserted.append(run)
        return inserted

    async def extend_lease(self, claim: Claim, worker_id: str, until: datetime) -> None:
        async with self._state.lock:
            if runs_alone(claim):
                fenced = self._state.fenced(claim, worker_id)
                if fenced is None:
                    raise LeaseLost(claim.endpoint.id, worker_id)
                self._state.runs[claim.run_id] = replace(fenced[1], lease_until=until)
                return
            endpoint = self._state.endpoints.get(claim.endpoint.id)
            if endpoint is None or endpoint.lease_owner != worker_id:
                raise LeaseLost(claim.endpoint.id, worker_id)
            self._state.endpoints[endpoint.id] = replace(endpoint, lease_until=until)

    async def finish_many(self, finishes: Sequence[Finish]) -> list[Recorded | CronpilotError]:
        async with self._state.lock:
            state = self._state
            stored = {
                item.claim.endpoint.id: state.endpoints[item.claim.endpoint.id]
                for item in finishes
                if item.claim.endpoint.id in state.endpoints
            }
            running = {
                run.id: run.started_at
                for run in (state.runs.get(item.claim.run_id) for item in finishes)
                if run is not None and run.status is RunStatus.RUNNING
            }
            settled = settle_batch(finishes, stored, running)
            for one in settled:
                if one is not None:
                    state.runs[one.run.id] = one.run
                    state.runs.update((run.id, run) for run in one.skipped)
                    state.endpoints[one.endpoint.id] = one.endpoint
                    state.add_notifications(one.raised)
            recorded: list[Recorded | CronpilotError] = []
            for item, one in zip(finishes, settled, strict=True):
                if one is None:
                    recorded.append(LeaseLost(item.claim.endpoint.id, item.worker_id))
                elif item.claim.endpoint.spec.dependants:
                    advanced = advance_dag(state, item, one.run)
                    recorded.append(replace(advanced, overlapped=len(one.skipped)))
                else:
                    recorded.append(Recorded(one.run, [], overlapped=len(one.skipped)))
        return recorded

    async def release(self, claim: Claim, worker_id: str) -> None:
        async with self._state.lock:
            fenced = self._state.fenced(claim, worker_id)
            if fenced is None:
                return
            endpoint, running = fenced
            if runs_alone(claim):
                del self._state.runs[running.id]
                self._state.endpoints[endpoint.id] = given_back(endpoint, claim)
                return
            if claim.queued is None:
                del self._state.runs[running.id]
            else:
                self._state.runs[running.id] = claim.queued
            self._state.endpoints[endpoint.id] = replace(
                endpoint, lease_owner=None, lease_until=None
            )

    async def abandon(self, claim: Claim, worker_id: str, reason: str, now: datetime) -> None:
        async with self._state.lock:
            fenced = self._state.fenced(claim, worker_id)
            if fenced is None:
                return
            endpoint, running = fenced
            self._state.runs[running.id] = abandoned_run(running, ErrorKind.SHUTDOWN, reason, now)
            if not runs_alone(claim):
                self._state.endpoints[endpoint.id] = after_run(endpoint, running, None, now)

    async def cancel(self, claim: Claim, worker_id: str, now: datetime) -> None:
        async with self._state.lock:
            fenced = self._state.fenced(claim, worker_id)
            if fenced is None:
                return
            endpoint, running = fenced
            self._state.runs[running.id] = cancelled_run(running, now)
            if not runs_alone(claim):
                self._state.endpoints[endpoint.id] = after_run(endpoint, running, None, now)

    async def cancels_asked(self, run_ids: Collection[str]) -> set[str]:
        runs = self._state.runs
        return {
            run_id
            for run_id in run_ids
            if run_id in runs and runs[run_id].cancel_requested_by is not None
        }

    async def reap(self, now: datetime) -> int:
        reaped = 0
        async with self._state.lock:
            for endpoint in list(self._state.endpoints.values()):
                if not lease_expired(endpoint, now):
                    continue
                abandoned = [
                    _expired(r, now)
                    for r in self._state.runs_of(endpoint.id)
                    if r.status is RunStatus.RUNNING and r.lease_until is None
                ]
                for run in abandoned:
                    self._state.runs[run.id] = run
                reaped += len(abandoned)
                self._state.endpoints[endpoint.id] = after_reap(endpoint, abandoned, now)
            # Runs alone: their endpoint moved past their slots when they were claimed.
            for run in list(self._state.runs.values()):
                if run_lease_expired(run, now):
                    self._state.runs[run.id] = _expired(run, now)
                    reaped += 1
        return reaped

    async def next_due_at(self) -> datetime | None:
        return next_due(
            self._state.endpoints.values(), self._state.runs.values(), self._state.limits
        )


class MemoryRuns(RunRepository):
    def __init__(self, state: MemoryState) -> None:
        self._state = state

    async def list_runs(
        self, endpoint_id: str, limit: int = 50, offset: int = 0, since: datetime | None = None
    ) -> list[Run]:
        kept = [r for r in self._state.runs_of(endpoint_id) if since is None or r.slot_at >= since]
        return kept[offset : offset + limit]

    async def page_runs(
        self, where: RunFilter, limit: int, after: Cursor | None = None
    ) -> list[Run]:
        chosen = [
            run
            for run in self._state.runs.values()
            if (where.job_id is None or run.job_id == where.job_id)
            and (where.job_ids is None or run.job_id in where.job_ids)
            and (where.endpoint_id is None or run.endpoint_id == where.endpoint_id)
            and (where.status is None or run.status is where.status)
            and (where.trigger is None or run.trigger is where.trigger)
            and falls_in(where.within, run.slot_at)
            and follows(run.slot_at, run.id, after)
        ]
        chosen.sort(key=lambda run: (run.slot_at, run.id), reverse=True)
        return chosen[:limit]

    async def get_run(self, run_id: str) -> Run:
        found = by_id_or_prefix("run", run_id, self._state.runs)
        if found is None:
            raise RunNotFound(run_id)
        return found

    async def dag_run_runs(self, dag_run_id: str) -> list[Run]:
        found = [
            run for run in self._state.runs.values() if dag_run_id in (run.trace_id, run.dag_run_id)
        ]
        return sorted(found, key=lambda run: (run.started_at, run.id))

    async def ask_cancel(self, asked: Run, status: RunStatus) -> bool:
        async with self._state.lock:
            stored = self._state.runs.get(asked.id)
            if stored is None or stored.status is not status:
                return False
            self._state.runs[asked.id] = replace(
                stored,
                status=asked.status,
                finished_at=asked.finished_at,
                error_message=asked.error_message,
                cancel_requested_by=asked.cancel_requested_by,
            )
        return True

    async def latest_runs(self, endpoint_ids: Sequence[str]) -> dict[str, Run]:
        latest: dict[str, Run] = {}
        for endpoint_id in endpoint_ids:
            history = self._state.runs_of(endpoint_id)
            if history:
                latest[endpoint_id] = history[0]
        return latest

    async def prune(self, keep_per_endpoint: int) -> int:
        async with self._state.lock:
            doomed: list[str] = []
            for endpoint_id in {run.endpoint_id for run in self._state.runs.values()}:
                finished = [run for run in self._state.runs_of(endpoint_id) if run.status.finished]
                doomed.extend(run.id for run in finished[max(keep_per_endpoint, 0) :])
            for run_id in doomed:
                del self._state.runs[run_id]
        return len(doomed)

    async def prune_before(self, before: datetime, limit: int) -> int:
        async with self._state.lock:
            finished = (run for run in self._state.runs.values() if run.status.finished)
            old = sorted((run for run in finished if run.slot_at < before), key=_by_slot)
            for run in old[: max(limit, 0)]:
                del self._state.runs[run.id]
        return min(len(old), max(limit, 0))

    async def roll_history(self, today: date, keep_from: date) -> int:
        return 0

    async def slots_taken(self, endpoint_id: str, start: datetime, end: datetime) -> set[datetime]:
        return {r.slot_at for r in self._state.runs_of(endpoint_id) if start <= r.slot_at <= end}

    async def newest_finished_slot(self, job_id: str) -> datetime | None:
        return self._state.newest_finished_slot(job_id)


class MemoryRepositories(Repositories):
    """The memory repositories over one state."""

    def __init__(self, state: MemoryState, planning: MemoryPlannerState) -> None:
        self._catalog = MemoryCatalog(state, planning)
        self._claims = MemoryClaims(state)
        self._runs = MemoryRuns(state)
        self._planner = MemoryPlanner(state, planning)
        self._schemas = MemorySchemas(state)
        self._graph = MemoryGraph(state)
        self._dag = MemoryDag(state)
        self._notifications = MemoryNotifications(state)
        self._workers = MemoryWorkers(state)
        self._access = MemoryAccess(state)
        self._approvals = MemoryApprovals(state)
        self._vectors = MemoryVectors(state)

    @property
    def catalog(self) -> MemoryCatalog:
        return self._catalog

    @property
    def claims(self) -> MemoryClaims:
        return self._claims

    @property
    def runs(self) -> MemoryRuns:
        return self._runs

    @property
    def planner(self) -> MemoryPlanner:
        return self._planner

    @property
    def schemas(self) -> MemorySchemas:
        return self._schemas

    @property
    def graph(self) -> MemoryGraph:
        return self._graph

    @property
    def dag(self) -> MemoryDag:
        return self._dag

    @property
    def notifications(self) -> MemoryNotifications:
        return self._notifications

    @property
    def workers(self) -> MemoryWorkers:
        return self._workers

    @property
    def access(self) -> MemoryAccess:
        return self._access

    @property
    def approvals(self) -> MemoryApprovals:
        return self._approvals

    @property
    def vectors(self) -> MemoryVectors:
        return self._vectors


class MemoryReadingUnit(MemoryRepositories, ReadingUnit):
    """`ReadingUnit` on memory: holds the store's lock for the whole block, for reading (other
    tasks' writes wait; its own raise `ReadOnlyUnit`)."""

    def __init__(self, state: MemoryState, planning: MemoryPlannerState) -> None:
        super().__init__(state, planning)
        self._state = state

    async def __aenter__(self) -> Self:
        await self._state.lock.acquire(reading=True)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._state.lock.release()


class MemoryUnitOfWork(MemoryRepositories, UnitOfWork):
    """`UnitOfWork` on memory: holds the store's lock for the whole block (other tasks' calls
    wait, as they would for a row lock) and keeps a copy of the state to put back on rollback."""

    def __init__(self, state: MemoryState, planning: MemoryPlannerState) -> None:
        super().__init__(state, planning)
        self._state = state
        self._planning = planning
        self._saved: tuple[dict[str, Any], dict[str, Any]] | None = None
        self._committed = False

    async def __aenter__(self) -> Self:
        await self._state.lock.acquire()
        self._saved = (_contents(self._state), _contents(self._planning))
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        assert self._saved is not None
        try:
            if not self._committed:
                state, planning = self._saved
                for target, saved in ((self._state, state), (self._planning, planning)):
                    for name, value in saved.items():
                        setattr(target, name, value)
        finally:
            self._saved = None
            self._state.lock.release()

    async def commit(self) -> None:
        self._committed = True


def _contents(holder: MemoryState | MemoryPlannerState) -> dict[str, Any]:
    """Copies of the holder's collections, the lock left out. Shallow copies do: the
    repositories replace what they store (frozen values, fresh lists), never change it."""
    return {f.name: copy.copy(getattr(holder, f.name)) for f in fields(holder) if f.name != "lock"}


class MemoryStore(MemoryRepositories, Store):
    def __init__(self) -> None:
        self.state = MemoryState()
        self.planning = MemoryPlannerState()
        super().__init__(self.state, self.planning)

    def unit_of_work(self) -> MemoryUnitOfWork:
        return MemoryUnitOfWork(self.state, self.planning)

    def reading(self) -> MemoryReadingUnit:
        return MemoryReadingUnit(self.state, self.planning)

    async def close(self) -> None:
        return None


def _expired(running: Run, now: datetime) -> Run:
    reason = f"lease of worker {running.worker_id} expired"
    return abandoned_run(running, ErrorKind.LEASE_EXPIRED, reason, now)


def _by_slot(run: Run) -> datetime:
    return run.slot_at
