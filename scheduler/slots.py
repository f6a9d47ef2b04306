"""The slot runner: claim → call → record for one claimed slot, with its retries within the slot,
then the DAG dependants its run started, each the same way."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import Protocol

from cronpilot.domain.errors import LeaseLost, SlotAlreadyRun, StoreUnavailable
from cronpilot.domain.log_extra import LogAction, log_extra
from cronpilot.domain.model import Claim, Endpoint, Finish, Response, Run, ScheduleSource
from cronpilot.domain.ports.claims import ClaimRepository
from cronpilot.domain.ports.clock import Clock
from cronpilot.domain.ports.dispatch import Dispatcher
from cronpilot.domain.ports.telemetry import Telemetry
from cronpilot.domain.ports.tracing import Tracer
from cronpilot.domain.runs.tracing import run_trace
from cronpilot.domain.schedule.quiet import skipped_quietly
from cronpilot.runtime.tracing import NoTracer
from cronpilot.scheduler.admission import Admission
from cronpilot.scheduler.attempts import Caller
from cronpilot.scheduler.health import StoreHealth
from cronpilot.scheduler.leases import InHand, LeaseKeeper
from cronpilot.scheduler.recorder import Recorder

# The worker's parts log as the worker: one logger to follow (or silence) a scheduler by.
log = logging.getLogger(__name__)

SHUTDOWN_REASON = "the worker stopped before the call ended"


@dataclass(slots=True)
class WorkerStats:
    """What this worker has done since it was made, for its stop summary."""

    claimed: int = 0
    finished: int = 0
    dropped: int = 0
    """Results refused by the store: the lease was lost or the slot had already run."""
    abandoned: int = 0
    cancelled: int = 0
    """Runs cut short on a cancel asked for by hand."""
    released: int = 0
    retries: int = 0
    """Calls made again within their slot (`retry`)."""
    ignored_headers: int = 0
    """Steering headers (`Retry-After`, `Cronpilot-Next-Run`) not taken: garbage, negative,
    absurd, or from an endpoint that did not opt in."""


@dataclass(slots=True)
class Load:
    """The slots in hand, for admission: those calling (or waiting for their due time) and those
    whose run is being recorded, DAG dependants included."""

    calling: int = 0
    recording: int = 0
    freed: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when a slot's call ends (it frees room) and when its run is recorded (its endpoint
    is free, re-planned)."""


class Unanswered(Enum):
    """Why a slot's call ended without an answer to record, and so what becomes of its run."""

    LEASE_LOST = "lease_lost"
    """Another worker may hold it now: dropped from hand, nothing recorded."""
    CANCELLED = "cancelled"
    """Someone asked to cancel the run: recorded `cancelled`."""
    ABANDONED = "abandoned"
    """The worker stopped with the call under way (or due): recorded abandoned."""
    RELEASED = "released"
    """The worker stopped before the slot was due: given back for another worker."""


CallOutcome = Response | Unanswered
"""How a claimed slot's call ended: the answer that decides its run, or why there is none."""


class RunObserver(Protocol):
    def observe(self, endpoint: Endpoint, run: Run) -> None:
        """Take note of a recorded run; must return at once (the learning happens elsewhere)."""
        ...


class SlotRunner:
    def __init__(
        self,
        claims: ClaimRepository,
        dispatcher: Dispatcher,
        clock: Clock,
        leases: LeaseKeeper,
        health: StoreHealth,
        *,
        admission: Admission,
        recorder: Recorder,
        worker_id: str,
        lease_seconds: float,
        observer: RunObserver | None,
        tracer: Tracer | None = None,
        telemetry: Telemetry,
    ) -> None:
        self._claims = claims
        self._telemetry = telemetry
        self._clock = clock
        self._leases = leases
        self._health = health
        self._admission = admission
        self._worker_id = worker_id
        self._lease_seconds = lease_seconds
        self._observer = observer
        self._tracer = tracer or NoTracer()
        self._stopping = asyncio.Event()
        """Set while draining: claims whose slot is not due yet are given back rather than
        waited for, and no call is retried."""
        self._aborted = False
        """Set when calls still running after the grace period must be cut short."""
        self._caller = Caller(dispatcher, clock, self._tracer, self._stopping)
        self._recorder = recorder
        self._load = Load()
        self._stats = WorkerStats()
        self._in_flight: set[asyncio.Task[None]] = set()

    @property
    def stats(self) -> WorkerStats:
        """What the slots have come to so far (read it, do not change it)."""
        return self._stats

    def to_claim(self, *, backlog: bool, quiet: bool) -> int:
        """How many slots to claim now, by admission, for the slots in hand."""
        load = self._load
        return self._admission.to_claim(
            calling=load.calling, recording=load.recording, backlog=backlog, quiet=quiet
        )

    def room(self) -> int:
        """How many more slots the worker has room for, low water aside."""
        return self._admission.room(self._load.calling, self._load.recording)

    def watch_freed(self) -> None:
        """From now on, `freed` waits for the next call to end or run to be recorded."""
        self._load.freed.clear()

    async def freed(self) -> None:
        """Wait until a call ended (room freed) or a run was recorded (its endpoint re-planned)
        since `watch_freed`."""
        await self._load.freed.wait()

    def claimed(self, claims: list[Claim], started: datetime) -> None:
        """Count a batch of claims, with a claim span in each claimed run's trace: the batch's
        round trips, which served them all."""
        self._stats.claimed += len(claims)
        ended = self._clock.now()
        for claim in claims:
            self._tracer.past_span(
                "claim", run_trace(claim), started, ended, run_id=claim.run_id, batch=len(claims)
            )

    def start(self, tasks: asyncio.TaskGroup, claims: list[Claim]) -> None:
        """Run each claim in a task of `tasks`, counted as calling from now on: the next
        admission sees them before they start."""
        self._load.calling += len(claims)
        for claim in claims:
            task = tasks.create_task(self.run(claim))
            self._in_flight.add(task)
            task.add_done_callback(self._in_flight.discard)

    async def drain(self, grace_seconds: float) -> None:
        """Wind down: give back the claims whose call has not gone out, give the calls under
        way `grace_seconds` (real time), then cut them short and abandon their runs. Returns
        once every slot task has ended, ready to start again."""
        running = {task for task in self._in_flight if not task.done()}
        if not running:
            return
        self._stopping.set()
        self._leases.cut("released", unstarted_only=True)
        # The load, not the tasks: a task runs a root and then its DAG dependants, each
        # counted while it calls or is recorded.
        load = self._load
        log.info(
            "waiting up to %.1f s for %d calls in flight and %d runs being recorded",
            grace_seconds,
            load.calling,
            load.recording,
            extra=log_extra("drain", count=load.calling, recording=load.recording),
        )
        _, late = await asyncio.wait(running, timeout=grace_seconds)
        if late:
            self._aborted = True
            self._leases.cut("abandoned")
            await asyncio.wait(late)
        self._stopping.clear()
        self._aborted = False

    async def run(self, claim: Claim) -> None:
        """Call one claimed slot and record it, then run the DAG dependants it started, in
        parallel, each as its child (and theirs in turn). Each counts against `concurrency`
        while it calls; they start at once, whatever the room, since their leases already run.
        Never raises: a bug is logged, and the worker goes on with its other slots."""
        try:
            children = await self._run_one(claim)
            if children:
                self._stats.claimed += len(children)
                self._load.calling += len(children)
                await asyncio.gather(*(self.run(child) for child in children))
        except Exception:
            log.exception("run handler crashed", extra=log_extra("internal_error"))

    async def _run_one(self, claim: Claim) -> list[Claim]:
        """Call and record one slot, keeping its lease from the claim until the run is
        recorded, dropped or abandoned; it was counted as calling when it was started. The
        dependants the run started."""
        held = self._leases.hold(claim)
        load = self._load
        calling = True
        try:
            outcome = await self._call(held)
            if isinstance(outcome, Unanswered):
                await self._settle(claim, outcome)
            else:
                self._note_attempts(claim, outcome)
            load.calling -= 1
            load.recording += 1
            calling = False
            load.freed.set()
            if not isinstance(outcome, Unanswered):
                held.recording_since = self._clock.now()
                return await self._record(claim, outcome)
        except StoreUnavailable as error:
            # Dropped from hand (below): its lease lapses and the reaper repairs the run.
            self._health.failed(
                error,
                "run_store_unavailable",
                "store unavailable while handling run %s; the reaper will repair it",
                claim.run_id,
                run_id=claim.run_id,
            )
        finally:
            if calling:
                load.calling -= 1
            else:
                load.recording -= 1
            # Its endpoint is free again and re-planned: the worker looks again when it is due.
            load.freed.set()
            self._leases.drop(claim.run_id)
        return []

    async def _call(self, held: InHand) -> CallOutcome:
        """The endpoint's response once its slot is due, or why there is none: the lease was
        lost, someone asked to cancel the run, or the worker is stopping (a call under way is
        then abandoned; a slot not due yet is released for another worker). The wait and the
        call run in this task; a cut cancels it (`InHand.cut`), and that cancellation ends
        here."""
        claim = held.claim
        response = None
        due = claim.slot_at if claim.call_at is None else claim.call_at
        early = (due - self._clock.now()).total_seconds()
        if not self._aborted and not (self._stopping.is_set() and early > 0):
            task = held.calling = asyncio.current_task()
            assert task is not None, "runs are executed in tasks of their own"
            try:
                if early > 0:
                    await self._clock.sleep(early)
                held.started = True
                if claim.schedule_source is ScheduleSource.QUIET:
                    quiet = claim.endpoint.spec.quiet
                    response = skipped_quietly(quiet, claim.slot_at, self._clock.now())
                else:
                    response = await self._caller.call(claim)
            except asyncio.CancelledError:
                # A cut is taken back, so that the run can still be settled; a cancellation
                # from anyone else goes on.
                if held.cut_by is None or task.uncancel() > 0:
                    raise
            finally:
                held.calling = None
        if held.cut_by == "lease_lost":
            return Unanswered.LEASE_LOST
        if held.cut_by == "cancelled":
            return Unanswered.CANCELLED
        if held.cut_by is None and response is not None:
            return response
        if held.started or early <= 0:
            return Unanswered.ABANDONED
        # Not due yet: another worker can still run it on time.
        return Unanswered.RELEASED

    async def _settle(self, claim: Claim, outcome: Unanswered) -> None:
        """Do with an unanswered claim what `outcome` says."""
        if outcome is Unanswered.LEASE_LOST:
            self._dropped(claim, "lease_lost")
        elif outcome is Unanswered.CANCELLED:
            await self._cancelled(claim)
        elif outcome is Unanswered.ABANDONED:
            await self._abandon(claim)
        else:
            await self.release([claim])

    def _note_attempts(self, claim: Claim, response: Response) -> None:
        """Count the slot's retries and the steering headers not taken, the latter logged once
        for the run."""
        self._stats.retries += len(response.attempts) - 1
        ignored = [
            reason
            for attempt in response.attempts
            if attempt.steering is not None
            for reason in attempt.steering.ignored
        ]
        if ignored:
            self._stats.ignored_headers += len(ignored)
            log.info(
                "%s slot %s: %s",
                claim.endpoint.ref,
                claim.slot_at.isoformat(),
                "; ".join(ignored),
                extra=log_extra(
                    "steering_ignored",
                    endpoint_id=claim.endpoint.id,
                    run_id=claim.run_id,
                    count=len(ignored),
                ),
            )

    async def _record(self, claim: Claim, response: Response) -> list[Claim]:
        """Record the run (with, for an endpoint with dependants, its report to them in the same
        transaction: a worker dying in between would lose the DAG run). The dependants it
        started."""
        finish = Finish(claim, self._worker_id, response, self._clock.now(), self._lease_seconds)
        try:
            with self._tracer.span("record", run_trace(claim), run_id=claim.run_id):
                recorded = await self._recorder.record(finish)
        except LeaseLost:
            self._dropped(claim, "lease_lost")
            return []
        except SlotAlreadyRun:
            self._dropped(claim, "slot_already_run")
            return []
        self._health.answered()
        self._stats.finished += 1
        self._telemetry.recorded(claim, recorded)
        run = recorded.run
        if self._observer is not None:
            self._observer.observe(claim.endpoint, run)
        if log.isEnabledFor(logging.INFO):
            self._log_finish(claim, run)
        for approval in recorded.approvals:
            log.info(
                "a dependant of %s waits for an admin until %s: cronpilot approvals approve %s",
                claim.endpoint.ref,
                approval.expires_at.isoformat(),
                approval.id,
                extra=log_extra(
                    "approval_requested", endpoint_id=approval.endpoint_id, approval_id=approval.id
                ),
            )
        return recorded.started

    def _log_finish(self, claim: Claim, run: Run) -> None:
        # Only when it will be written: its arguments cost more than the check, once per run.
        log.info(
            "%s slot %s: %s",
            claim.endpoint.ref,
            claim.slot_at.isoformat(),
            run.status,
            extra=log_extra(
                "finish",
                endpoint_id=claim.endpoint.id,
                run_id=run.id,
                status=str(run.status),
                status_code=run.status_code,
            ),
        )

    def _dropped(self, claim: Claim, action: LogAction) -> None:
        self._stats.dropped += 1
        if action == "lease_lost":
            self._telemetry.lease_lost(claim.endpoint)
        log.warning(
            "dropped run %s of %s: %s",
            claim.run_id,
            claim.endpoint.ref,
            action,
            extra=log_extra(action, endpoint_id=claim.endpoint.id, run_id=claim.run_id),
        )

    async def release(self, claims: Iterable[Claim]) -> None:
        """Give back claims whose call never started, for another worker to run on time."""
        for claim in claims:
            await self._claims.release(claim, self._worker_id)
            self._stats.released += 1
            log.info(
                "released %s slot %s unstarted",
                claim.endpoint.ref,
                claim.slot_at.isoformat(),
                extra=log_extra("release", endpoint_id=claim.endpoint.id),
            )

    async def _cancelled(self, claim: Claim) -> None:
        """Record a run cut short because someone asked to cancel it (`domain.runs.cancelling`)."""
        await self._claims.cancel(claim, self._worker_id, self._clock.now())
        self._stats.cancelled += 1
        log.info(
            "cancelled run %s of %s",
            claim.run_id,
            claim.endpoint.ref,
            extra=log_extra("cancel", endpoint_id=claim.endpoint.id, run_id=claim.run_id),
        )

    async def _abandon(self, claim: Claim) -> None:
        await self._claims.abandon(claim, self._worker_id, SHUTDOWN_REASON, self._clock.now())
        self._stats.abandoned += 1
        log.warning(
            "abandoned run %s of %s at shutdown",
            claim.run_id,
            claim.endpoint.ref,
            extra=log_extra("abandon", endpoint_id=claim.endpoint.id, run_id=claim.run_id),
        )
