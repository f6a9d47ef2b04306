"""`MemoryStore`: the three repositories over plain dicts, applying `domain.transitions` exactly
as the SQL store does. One `asyncio.Lock` stands in for the database's transactions; tests may
inspect `store.state` directly."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from cronpilot.adapters.memory.graph import MemoryDag, MemoryGraph, MemorySchemas, advance_dag
from cronpilot.adapters.memory.notifications import MemoryNotifications
from cronpilot.adapters.memory.planner import MemoryPlanner
from cronpilot.domain.alerts import Notification, run_notifications
from cronpilot.domain.dag import DagWait
from cronpilot.domain.errors import (
    CronpilotError,
    EndpointNotFound,
    JobNotFound,
    LeaseLost,
    RunNotFound,
)
from cronpilot.domain.graph import Edge, EdgeType
from cronpilot.domain.model import (
    Claim,
    Endpoint,
    EndpointSpec,
    ErrorKind,
    Finish,
    IntervalHint,
    Job,
    OneShotHint,
    Pause,
    Recorded,
    Response,
    Run,
    RunStatus,
    new_id,
)
from cronpilot.domain.outputs import DriftEvent, OutputSchema
from cronpilot.domain.ports import ApplyReport, JobDeclaration
from cronpilot.domain.requested_runs import ahead_of_schedule
from cronpilot.domain.transitions import (
    abandoned_run,
    after_finish,
    after_reap,
    after_run,
    after_slot,
    caught_up,
    claim_of,
    finished_run,
    is_due,
    queued_claim,
    replanned,
    started_queued,
    started_run,
    with_hints,
    with_pause,
    with_spec,
)


@dataclass
class MemoryState:
    jobs: dict[str, Job] = field(default_factory=dict)
    """By job name."""
    endpoints: dict[str, Endpoint] = field(default_factory=dict)
    """By endpoint id."""
    runs: dict[str, Run] = field(default_factory=dict)
    """By run id."""
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    output_schemas: dict[str, OutputSchema] = field(default_factory=dict)
    """By endpoint id."""
    drift: dict[str, list[DriftEvent]] = field(default_factory=dict)
    """By endpoint id, oldest first."""
    edges: dict[tuple[str, str, EdgeType], Edge] = field(default_factory=dict)
    waits: dict[tuple[str, str], DagWait] = field(default_factory=dict)
    """By (DAG run id, endpoint id)."""
    notifications: dict[str, Notification] = field(default_factory=dict)
    """The alerts outbox, by notification id."""

    def runs_of(self, endpoint_id: str) -> list[Run]:
        """Runs of one endpoint, newest slot first."""
        mine = [run for run in self.runs.values() if run.endpoint_id == endpoint_id]
        return sorted(mine, key=lambda run: run.slot_at, reverse=True)

    def endpoint(self, endpoint_id: str) -> Endpoint:
        try:
            return self.endpoints[endpoint_id]
        except KeyError:
            raise EndpointNotFound(endpoint_id) from None

    def fenced(self, claim: Claim, worker_id: str) -> tuple[Endpoint, Run] | None:
        """As in the SQL store: our lease and our claim's run still running."""
        endpoint = self.endpoints.get(claim.endpoint.id)
        run = self.runs.get(claim.run_id)
        if endpoint is None or endpoint.lease_owner != worker_id:
            return None
        if run is None or run.status is not RunStatus.RUNNING:
            return None
        return endpoint, run

    def finish(self, claim: Claim, worker_id: str, response: Response, now: datetime) -> Run:
        """One finish of `ClaimRepository.finish_many` but the DAG's part, the lock held by the
        caller."""
        fenced = self.fenced(claim, worker_id)
        if fenced is None:
            raise LeaseLost(claim.endpoint.id, worker_id)
        endpoint, running = fenced
        finished = finished_run(running, response, now)
        self.runs[finished.id] = finished
        ended = after_finish(endpoint, running, response, now)
        self.endpoints[endpoint.id] = ended
        self.add_notifications(run_notifications(endpoint, ended, finished, now))
        return finished

    def add_notifications(self, raised: Sequence[Notification]) -> None:
        for notification in raised:
            self.notifications[notification.id] = notification

    def endpoint_by_ref(self, ref: str) -> Endpoint:
        """By id or by `job/endpoint`."""
        if ref in self.endpoints:
            return self.endpoints[ref]
        for endpoint in self.endpoints.values():
            if endpoint.ref == ref:
                return endpoint
        raise EndpointNotFound(ref)


class MemoryCatalog:
    def __init__(self, state: MemoryState) -> None:
        self._state = state

    async def apply(self, declarations: Sequence[JobDeclaration], now: datetime) -> ApplyReport:
        report = ApplyReport()
        async with self._state.lock:
            # Work on copies and swap them in at the end: an error leaves nothing applied.
            jobs = dict(self._state.jobs)
            endpoints = dict(self._state.endpoints)
            for declaration in declarations:
                job = _apply_job(jobs, declaration.job, report)
                for spec in declaration.endpoints:
                    _apply_endpoint(endpoints, job, spec, now, report)
                declared = {spec.name for spec in declaration.endpoints}
                report.absent.extend(
                    sorted(
                        e.ref
                        for e in endpoints.values()
                        if e.job_id == job.id and e.name not in declared
                    )
                )
            self._state.jobs, self._state.endpoints = jobs, endpoints
        return report

    async def list_jobs(self) -> list[Job]:
        return sorted(self._state.jobs.values(), key=lambda job: job.name)

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

    async def get_endpoint(self, ref: str) -> Endpoint:
        return self._state.endpoint_by_ref(ref)

    async def set_pause(self, endpoint_id: str, pause: Pause | None, now: datetime) -> Endpoint:
        return await self._change(endpoint_id, lambda e: with_pause(e, pause, now))

    async def set_hints(
        self,
        endpoint_id: str,
        interval_hint: IntervalHint | None,
        oneshot_hint: OneShotHint | None,
        now: datetime,
    ) -> Endpoint:
        return await self._change(
            endpoint_id, lambda e: with_hints(e, interval_hint, oneshot_hint, now)
        )

    async def _change(self, endpoint_id: str, change: Callable[[Endpoint], Endpoint]) -> Endpoint:
        async with self._state.lock:
            changed = change(self._state.endpoint(endpoint_id))
            self._state.endpoints[endpoint_id] = changed
        return changed


def _apply_job(jobs: dict[str, Job], declared: Job, report: ApplyReport) -> Job:
    stored = jobs.get(declared.name)
    if stored is None:
        jobs[declared.name] = declared
        report.created.append(declared.name)
        return declared
    if (stored.description, stored.planner_mode) == (declared.description, declared.planner_mode):
        report.unchanged.append(declared.name)
        return stored
    jobs[declared.name] = replace(declared, id=stored.id)
    report.updated.append(declared.name)
    return jobs[declared.name]


def _apply_endpoint(
    endpoints: dict[str, Endpoint],
    job: Job,
    spec: EndpointSpec,
    now: datetime,
    report: ApplyReport,
) -> None:
    ref = f"{job.name}/{spec.name}"
    stored = next((e for e in endpoints.values() if e.ref == ref), None)
    if stored is None:
        created = replanned(Endpoint(new_id(), job.id, job.name, spec), now)
        endpoints[created.id] = created
        report.created.append(ref)
    elif stored.spec == spec:
        report.unchanged.append(ref)
    else:
        endpoints[stored.id] = with_spec(stored, spec, now)
        report.updated.append(ref)


class MemoryClaims:
    def __init__(self, state: MemoryState) -> None:
        self._state = state

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
            # As in the SQL store: queued runs first, the earliest due of each free endpoint
            # among those that may go before its schedule.
            for queued in self._waiting(horizon):
                if len(claims) >= limit:
                    break
                endpoint = self._state.endpoints[queued.endpoint_id]
                if endpoint.lease_owner is not None:
                    continue
                assert queued.due_at is not None
                if not ahead_of_schedule(
                    queued.trigger, queued.due_at, endpoint.next_run_at, horizon
                ):
                    continue
                leased = replace(endpoint, lease_owner=worker_id, lease_until=lease_until)
                self._state.endpoints[endpoint.id] = leased
                self._state.runs[queued.id] = started_queued(queued, worker_id, now)
                claims.append(queued_claim(leased, queued, lease_until))
            due = sorted(
                (e for e in self._state.endpoints.values() if is_due(e, horizon)),
                key=lambda e: e.next_run_at or now,
            )
            for planned in due[: max(limit - len(claims), 0)]:
                # As in the SQL store: a missed baseline slot moves by its catch-up rule.
                endpoint = caught_up(planned, now) or planned
                self._state.endpoints[endpoint.id] = endpoint
                if not is_due(endpoint, horizon):
                    continue
                slot = endpoint.next_slot
                assert slot is not None
                if any(run.slot_at == slot for run in self._state.runs_of(endpoint.id)):
                    # Same rule as the SQL store: a slot that already ran is planned past.
                    self._state.endpoints[endpoint.id] = after_slot(endpoint, slot, None, now)
                    continue
                leased = replace(endpoint, lease_owner=worker_id, lease_until=lease_until)
                claim = claim_of(leased, new_id(), new_id(), lease_until)
                self._state.endpoints[endpoint.id] = leased
                self._state.runs[claim.run_id] = started_run(claim, worker_id, now)
                claims.append(claim)
        return claims

    def _waiting(self, due_by: datetime) -> list[Run]:
        """Queued runs due by `due_by`, earliest first."""
        waiting = [
            run
            for run in self._state.runs.values()
            if run.status is RunStatus.QUEUED and run.due_at is not None and run.due_at <= due_by
        ]
        return sorted(waiting, key=lambda run: (run.due_at, run.slot_at))

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
            endpoint = self._state.endpoints.get(claim.endpoint.id)
            if endpoint is None or endpoint.lease_owner != worker_id:
                raise LeaseLost(claim.endpoint.id, worker_id)
            self._state.endpoints[endpoint.id] = replace(endpoint, lease_until=until)

    async def finish_many(self, finishes: Sequence[Finish]) -> list[Recorded | CronpilotError]:
        recorded: list[Recorded | CronpilotError] = []
        async with self._state.lock:
            for item in finishes:
                claim = item.claim
                try:
                    run = self._state.finish(claim, item.worker_id, item.response, item.now)
                except LeaseLost as lost:
                    recorded.append(lost)
                    continue
                started = []
                if claim.endpoint.spec.dependants:
                    started = advance_dag(self._state, item, run)
                recorded.append(Recorded(run, started))
        return recorded

    async def release(self, claim: Claim, worker_id: str) -> None:
        async with self._state.lock:
            fenced = self._state.fenced(claim, worker_id)
            if fenced is None:
                return
            endpoint, running = fenced
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
            self._state.endpoints[endpoint.id] = after_run(endpoint, running, None, now)

    async def reap(self, now: datetime) -> int:
        reaped = 0
        async with self._state.lock:
            for endpoint in list(self._state.endpoints.values()):
                if endpoint.lease_owner is None or endpoint.lease_until is None:
                    continue
                if endpoint.lease_until >= now:
                    continue
                abandoned = [
                    abandoned_run(
                        r, ErrorKind.LEASE_EXPIRED, f"lease of worker {r.worker_id} expired", now
                    )
                    for r in self._state.runs_of(endpoint.id)
                    if r.status is RunStatus.RUNNING
                ]
                for run in abandoned:
                    self._state.runs[run.id] = run
                reaped += len(abandoned)
                self._state.endpoints[endpoint.id] = after_reap(endpoint, abandoned, now)
        return reaped

    async def next_due_at(self) -> datetime | None:
        times = [
            e.next_run_at
            for e in self._state.endpoints.values()
            if e.lease_owner is None and e.next_run_at is not None
        ]
        free = {e.id for e in self._state.endpoints.values() if e.lease_owner is None}
        times += [
            run.due_at
            for run in self._state.runs.values()
            if run.status is RunStatus.QUEUED and run.due_at is not None and run.endpoint_id in free
        ]
        return min(times, default=None)


class MemoryRuns:
    def __init__(self, state: MemoryState) -> None:
        self._state = state

    async def list_runs(self, endpoint_id: str, limit: int = 50, offset: int = 0) -> list[Run]:
        return self._state.runs_of(endpoint_id)[offset : offset + limit]

    async def get_run(self, run_id: str) -> Run:
        try:
            return self._state.runs[run_id]
        except KeyError:
            raise RunNotFound(run_id) from None

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

    async def slots_taken(self, endpoint_id: str, start: datetime, end: datetime) -> set[datetime]:
        return {r.slot_at for r in self._state.runs_of(endpoint_id) if start <= r.slot_at <= end}


class MemoryStore:
    def __init__(self) -> None:
        self.state = MemoryState()
        self._catalog = MemoryCatalog(self.state)
        self._claims = MemoryClaims(self.state)
        self._runs = MemoryRuns(self.state)
        self._planner = MemoryPlanner(self.state)
        self._schemas = MemorySchemas(self.state)
        self._graph = MemoryGraph(self.state)
        self._dag = MemoryDag(self.state)
        self._notifications = MemoryNotifications(self.state)

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

    async def close(self) -> None:
        return None
