"""The slot runner: claim → call → record for one claimed slot, with its retries within the slot,
then the DAG dependants its run started, each the same way."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Protocol

from cronpilot.domain.assertions import judged
from cronpilot.domain.errors import LeaseLost, SlotAlreadyRun, StoreUnavailable, TemplateUnfilled
from cronpilot.domain.log_extra import LogAction, log_extra
from cronpilot.domain.model import BodyAbsence, Claim, Endpoint, ErrorKind, Finish, Response, Run
from cronpilot.domain.ports.claims import ClaimRepository
from cronpilot.domain.ports.clock import Clock
from cronpilot.domain.ports.dispatch import Dispatcher
from cronpilot.domain.ports.telemetry import Telemetry
from cronpilot.domain.ports.tracing import Tracer
from cronpilot.domain.sent_request import sent_request
from cronpilot.domain.tracing import run_trace
from cronpilot.runtime.timing import pause
from cronpilot.runtime.tracing import NoTracer
from cronpilot.scheduler.attempts import call_slot
from cronpilot.scheduler.health import StoreHealth
from cronpilot.scheduler.leases import InHand, LeaseKeeper
from cronpilot.scheduler.recorder import Recorder
from cronpilot.scheduler.requests import request_for, traced

# The worker's parts log as the worker: one logger to follow (or silence) a scheduler by.
log = logging.getLogger("cronpilot.scheduler.worker")

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
        worker: tuple[str, float],
        observer: RunObserver | None,
        tracer: Tracer | None = None,
        telemetry: Telemetry,
    ) -> None:
        self._claims = claims
        self._telemetry = telemetry
        self._dispatcher = dispatcher
        self._clock = clock
        self._leases = leases
        self._health = health
        self._worker_id, self._lease_seconds = worker
        self._observer = observer
        self.tracer = tracer or NoTracer()
        self._recorder = Recorder(claims)
        self.load = Load()
        self.stats = WorkerStats()
        self.stopping = asyncio.Event()
        """Set on stop: claims whose slot is not due yet are given back rather than waited for,
        and no call is retried."""
        self.aborted = False
        """Set when calls still running after the grace period must be cut short."""

    def start(self, tasks: asyncio.TaskGroup, claims: list[Claim]) -> set[asyncio.Task[None]]:
        """Run each claim in a task of `tasks`, counted as calling from now on: the next
        admission sees them before they start."""
        self.load.calling += len(claims)
        return {tasks.create_task(self.run(claim)) for claim in claims}

    async def run(self, claim: Claim) -> None:
        """Call one claimed slot and record it, then run the DAG dependants it started, in
        parallel, each as its child (and theirs in turn). Each counts against `concurrency`
        while it calls; they start at once, whatever the room, since their leases already run.
        Never raises: a bug is logged, and the worker goes on with its other slots."""
        try:
            children = await self._run_one(claim)
            if children:
                self.stats.claimed += len(children)
                self.load.calling += len(children)
                await asyncio.gather(*(self.run(child) for child in children))
        except Exception:
            log.exception("run handler crashed", extra=log_extra("internal_error"))

    async def _run_one(self, claim: Claim) -> list[Claim]:
        """Call and record one slot, keeping its lease from the claim until the run is
        recorded, dropped or abandoned; it was counted as calling when it was started. The
        dependants the run started."""
        held = self._leases.hold(claim)
        load = self.load
        calling = True
        try:
            response = await self._call(held)
            load.calling -= 1
            load.recording += 1
            calling = False
            load.freed.set()
            if response is not None:
                held.recording_since = self._clock.now()
                return await self._record(claim, response)
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

    async def _call(self, held: InHand) -> Response | None:
        """The endpoint's response once its slot is due, or None when the call was cut short:
        the lease was lost, someone asked to cancel the run (it is recorded `cancelled`), or the
        worker is shutting down (a call under way is then abandoned; a slot not due yet is
        released for another worker). The wait and the call run in this
        task; a cut cancels it (`InHand.cut`), and that cancellation ends here."""
        claim = held.claim
        response = None
        due = claim.slot_at if claim.call_at is None else claim.call_at
        early = (due - self._clock.now()).total_seconds()
        if not self.aborted and not (self.stopping.is_set() and early > 0):
            task = held.calling = asyncio.current_task()
            assert task is not None, "runs are executed in tasks of their own"
            try:
                if early > 0:
                    await self._clock.sleep(early)
                held.started = True
                response = await call_slot(
                    claim, lambda: self._dispatch(claim), self._clock, self._rest
                )
            except asyncio.CancelledError:
                # A cut is taken back, so that the run can still be settled; a cancellation
                # from anyone else goes on.
                if held.cut_by is None or task.uncancel() > 0:
                    raise
            finally:
                held.calling = None
        if held.cut_by == "lease_lost":
            self._dropped(claim, "lease_lost")
        elif held.cut_by == "cancelled":
            await self._cancelled(claim)
        elif held.cut_by is None and response is not None:
            self._note_attempts(claim, response)
            return response
        elif held.started or early <= 0:
            await self._abandon(claim)
        else:
            # Not due yet: another worker can still run it on time.
            await self.release([claim])
        return None

    async def _dispatch(self, claim: Claim) -> Response:
        try:
            request = request_for(claim)
        except TemplateUnfilled as exc:
            now = self._clock.now()
            return Response(
                status_code=None,
                body_absence=BodyAbsence.NO_RESPONSE,
                error_kind=ErrorKind.TEMPLATE,
                error_message=f"not called: {exc}",
                started_at=now,
                finished_at=now,
            )
        sent = sent_request(request)
        try:
            with self.tracer.span(
                "call", run_trace(claim), run_id=claim.run_id, endpoint=claim.endpoint.ref
            ) as span:
                response = await self._dispatcher.dispatch(traced(request, span.context))
                if response.status_code is not None:
                    span.note(status_code=response.status_code)
                if response.error_kind is not None:
                    span.note(error_kind=str(response.error_kind))
        except Exception as exc:
            # The dispatcher reports endpoint failures in its Response; a raise is a bug in it.
            # Record the run as failed rather than leave it `running` until the reaper comes.
            log.exception(
                "dispatcher raised for run %s",
                claim.run_id,
                extra=log_extra("dispatch_error", run_id=claim.run_id),
            )
            return Response(
                status_code=None,
                body_absence=BodyAbsence.NO_RESPONSE,
                error_kind=ErrorKind.INTERNAL,
                error_message=f"dispatcher error: {type(exc).__name__}",
                request=sent,
            )
        return judged(claim.endpoint.spec, replace(response, request=sent))

    async def _rest(self, seconds: float) -> bool:
        """Wait before a retry; cut short, and False, once the worker is stopping."""
        return await pause(self._clock, seconds, self.stopping)

    def _note_attempts(self, claim: Claim, response: Response) -> None:
        """Count the slot's retries and the steering headers not taken, the latter logged once
        for the run."""
        self.stats.retries += len(response.attempts) - 1
        ignored = [
            reason
            for attempt in response.attempts
            if attempt.steering is not None
            for reason in attempt.steering.ignored
        ]
        if ignored:
            self.stats.ignored_headers += len(ignored)
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
            with self.tracer.span("record", run_trace(claim), run_id=claim.run_id):
                recorded = await self._recorder.record(finish)
        except LeaseLost:
            self._dropped(claim, "lease_lost")
            return []
        except SlotAlreadyRun:
            self._dropped(claim, "slot_already_run")
            return []
        self._health.answered()
        self.stats.finished += 1
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
        self.stats.dropped += 1
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
            self.stats.released += 1
            log.info(
                "released %s slot %s unstarted",
                claim.endpoint.ref,
                claim.slot_at.isoformat(),
                extra=log_extra("release", endpoint_id=claim.endpoint.id),
            )

    async def _cancelled(self, claim: Claim) -> None:
        """Record a run cut short because someone asked to cancel it (`domain.cancelling`)."""
        await self._claims.cancel(claim, self._worker_id, self._clock.now())
        self.stats.cancelled += 1
        log.info(
            "cancelled run %s of %s",
            claim.run_id,
            claim.endpoint.ref,
            extra=log_extra("cancel", endpoint_id=claim.endpoint.id, run_id=claim.run_id),
        )

    async def _abandon(self, claim: Claim) -> None:
        await self._claims.abandon(claim, self._worker_id, SHUTDOWN_REASON, self._clock.now())
        self.stats.abandoned += 1
        log.warning(
            "abandoned run %s of %s at shutdown",
            claim.run_id,
            claim.endpoint.ref,
            extra=log_extra("abandon", endpoint_id=claim.endpoint.id, run_id=claim.run_id),
        )
