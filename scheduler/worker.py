"""The scheduler worker: claim due slots, call them, record what came back, sleep until more is due.

Any number of workers, in any number of processes, share one store. The store's atomic claim and
fenced finish keep them from running one slot twice; a worker only looks after its own calls.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from cronpilot.domain.errors import LeaseLost, SlotAlreadyRun, StoreUnavailable, TemplateUnfilled
from cronpilot.domain.log_extra import log_extra
from cronpilot.domain.model import BodyAbsence, Claim, Endpoint, ErrorKind, Response, Run
from cronpilot.domain.outage import described, store_retry_delay
from cronpilot.domain.ports import Clock, Dispatcher, Store, Waker
from cronpilot.scheduler.attempts import call_slot
from cronpilot.scheduler.config import WorkerConfig
from cronpilot.scheduler.requests import request_for

log = logging.getLogger(__name__)

SHUTDOWN_REASON = "the worker stopped before the call ended"
QUIET_CAP = timedelta(milliseconds=100)
"""The longest quiet time, whatever the claim-ahead: slots re-planned into it wait that long."""


@dataclass(slots=True)
class WorkerStats:
    """What this worker has done since it was made, for its stop summary."""

    claimed: int = 0
    finished: int = 0
    dropped: int = 0
    """Results refused by the store: the lease was lost or the slot had already run."""
    abandoned: int = 0
    released: int = 0
    retries: int = 0
    """Calls made again within their slot (`retry`)."""
    ignored_headers: int = 0
    """Steering headers (`Retry-After`, `Cronpilot-Next-Run`) not taken: garbage, negative,
    absurd, or from an endpoint that did not opt in."""


@dataclass(slots=True, eq=False)
class _InHand:
    """A claim this worker holds, from the claim until its run is recorded, dropped or
    abandoned: when its lease is next due for extension, and the task calling its endpoint while
    the call is under way (the task to cancel to cut the call short)."""

    claim: Claim
    extend_at: datetime
    calling: asyncio.Task[Any] | None = None
    """The run's task while it waits for the slot's due time or calls the endpoint."""
    started: bool = False
    """The call went out (the slot was due); until then a cut gives the claim back unrun."""
    cut_by: str | None = None
    """Why the call was cut short: `lease_lost`, `abandoned` or `released`."""
    recording_since: datetime | None = None
    """When the call ended and the recording of its run began: a run the store cannot record
    within a lease gets no more extensions (`_keep_leases`)."""


class RunObserver(Protocol):
    def observe(self, endpoint: Endpoint, run: Run) -> None:
        """Take note of a recorded run; must return at once (the learning happens elsewhere)."""
        ...


class SchedulerWorker:
    def __init__(
        self,
        store: Store,
        dispatcher: Dispatcher,
        clock: Clock,
        waker: Waker,
        config: WorkerConfig,
        *,
        observer: RunObserver | None = None,
    ) -> None:
        self._store = store
        self._dispatcher = dispatcher
        self._clock = clock
        self._waker = waker
        self._config = config
        self._observer = observer
        self._lease = timedelta(seconds=config.lease_seconds)
        self._ahead = timedelta(seconds=config.claim_ahead_seconds)
        self._quiet = min(self._ahead / 2, QUIET_CAP)
        self._quiet_until = clock.now()
        """Set at each claim: after one that took every slot due within reach, no claim before
        this; after a full one (a backlog), no claim of less than `_low_water` before this."""
        self._backlog = False
        """The last claim came back full: more slots may be due than there was room for."""
        self._low_water = max(1, min(config.batch_size, config.concurrency) // 10)
        self._stopping = asyncio.Event()
        """Set on stop: claims whose slot is not due yet are given back rather than waited for,
        and no call is retried."""
        self._in_hand: dict[str, _InHand] = {}
        """By run id, in the order their leases fall due for extension: one task keeps every
        lease (`_keep_leases`) rather than a task per call, and a call runs in its run's own
        task, cut short by cancelling it, rather than in a task of its own."""
        self._holding = asyncio.Event()
        self._ended = asyncio.Event()
        """Set when a slot's call ends: it frees room. One event rather than waiting on every
        task in flight, which costs a callback per task at every wake-up."""
        self._recording = 0
        """Slot tasks whose call has ended and whose run is being recorded: they hold no call,
        so they leave room for new claims (up to `concurrency` more of them)."""
        self._aborted = False
        """Set when calls still running after the grace period must be cut short."""
        self._next_dag_sweep = clock.now()
        self._store_down = False
        """A store failure has been reported and no store call has succeeded since: the runs and
        leases it fails meanwhile are not reported one by one."""
        self.stats = WorkerStats()

    async def run(self, stop: asyncio.Event) -> None:
        """Work until `stop` is set, then wind down: claim nothing more, give calls in flight
        `grace_seconds`, abandon the rest. Returns with no run of this worker left `running`
        (unless the store itself was unreachable, which the reaper repairs)."""
        in_flight: set[asyncio.Task[None]] = set()
        self._aborted = False
        self._stopping.clear()
        keeper = asyncio.create_task(self._keep_leases())
        failures = 0
        try:
            while not stop.is_set():
                self._ended.clear()
                in_flight = _still_running(in_flight)
                try:
                    if not await self._fill(in_flight, stop):
                        await self._idle(in_flight, stop)
                    failures = 0
                except StoreUnavailable as error:
                    failures += 1
                    await self._retry_later(error, failures, stop)
        finally:
            await self._drain(in_flight)
            keeper.cancel()
            await asyncio.gather(keeper, return_exceptions=True)
            stats = self.stats
            log.info(
                "scheduler %s stopped: %d claimed, %d recorded, %d dropped, %d abandoned, "
                "%d released",
                self._config.worker_id,
                stats.claimed,
                stats.finished,
                stats.dropped,
                stats.abandoned,
                stats.released,
                extra={"action": "stop", "worker_id": self._config.worker_id},
            )

    async def _retry_later(
        self, error: StoreUnavailable, failures: int, stop: asyncio.Event
    ) -> None:
        """Wait before trying the store again: from a fifth of a second, doubling with each
        failure in a row, up to `max_sleep_seconds`. One line per try; no traceback, which says
        nothing about a database that is down."""
        delay = store_retry_delay(failures, self._config.max_sleep_seconds)
        self._store_down = True
        log.warning(
            "store unavailable (%s); retrying in %.1f s",
            described(error),
            delay,
            extra={"action": "store_unavailable", "failures": failures},
        )
        await _first_of(stop.wait(), self._clock.sleep(delay))

    def _store_failed(
        self, error: StoreUnavailable, action: str, message: str, *args: object, **fields: object
    ) -> None:
        """Report a store failure met by one run or lease: a warning line for the first of an
        outage, only a debug line for the others until the store answers again (an outage fails
        every run in flight and every lease due)."""
        level = logging.DEBUG if self._store_down else logging.WARNING
        self._store_down = True
        log.log(
            level, f"{message} (%s)", *args, described(error), extra=log_extra(action, **fields)
        )

    def _store_answered(self) -> None:
        if self._store_down:
            self._store_down = False
            log.info("store reachable again", extra={"action": "store_available"})

    async def _fill(self, in_flight: set[asyncio.Task[None]], stop: asyncio.Event) -> bool:
        """Claim only as much as there is room for, and start every claim at once: a claim that
        had to wait for room would hold its endpoint away from other workers, and its lease
        would run out unkept. True when the batch came back full, so more may be due now."""
        wanted = self._wanted(in_flight)
        if wanted <= 0:
            return False
        started = self._clock.now()
        claims = await self._claim(wanted)
        if len(claims) < wanted and self._clock.now() >= self._next_dag_sweep:
            claims += await self._claim_ready_dependants(wanted - len(claims))
        if stop.is_set():
            await self._release(claims)
            return False
        for claim in claims:
            task = asyncio.create_task(self._execute(claim, root=True))
            task.add_done_callback(self._task_ended)
            in_flight.add(task)
        self._backlog = len(claims) == wanted
        self._quiet_until = started + self._quiet
        return self._backlog

    def _wanted(self, in_flight: set[asyncio.Task[None]]) -> int:
        """How many slots to claim now: as many as there is room for, up to a batch; none while
        a backlog waits, less room than `_low_water` is free and the quiet time lasts (a round
        trip per freed call would cost more than the call)."""
        room = self._room(in_flight)
        held_back = (
            self._backlog and room < self._low_water and self._clock.now() < self._quiet_until
        )
        if room <= 0 or held_back:
            return 0
        return min(self._config.batch_size, room)

    def _room(self, in_flight: set[asyncio.Task[None]]) -> int:
        """How many more slots this worker may claim: `concurrency` calls (or waits for a slot
        claimed ahead), plus as many runs again being recorded."""
        concurrency = self._config.concurrency
        return min(
            concurrency - (len(in_flight) - self._recording), 2 * concurrency - len(in_flight)
        )

    def _task_ended(self, _: asyncio.Task[None]) -> None:
        self._ended.set()

    async def _idle(self, in_flight: set[asyncio.Task[None]], stop: asyncio.Event) -> None:
        """Sleep until the next slot is due, a waker notification, a call ending (it frees room
        and re-plans its endpoint) or `stop`. Right after a claim that was not full, first wait
        out the quiet time, whatever calls end meanwhile: the slots falling due in it were
        claimed ahead."""
        quiet = (self._quiet_until - self._clock.now()).total_seconds()
        if quiet > 0 and not self._backlog:
            await _first_of(stop.wait(), self._clock.sleep(quiet), self._waker.wait(quiet))
            if stop.is_set():
                return
        sleepers: list[Coroutine[Any, Any, object]] = []
        if self._wanted(in_flight) > 0:
            delay = await self._seconds_until_due()
            if delay <= 0:
                return
            sleepers += [self._clock.sleep(delay), self._waker.wait(self._config.max_sleep_seconds)]
        elif self._room(in_flight) > 0:
            # Held back by the low-water mark, which lapses with the quiet time.
            sleepers.append(self._clock.sleep(quiet))
        await _first_of(stop.wait(), self._ended.wait(), *sleepers)

    async def _seconds_until_due(self) -> float:
        due = await self._store.claims.next_due_at()
        if due is None:
            return self._config.max_sleep_seconds
        delay = (due - self._ahead - self._clock.now()).total_seconds()
        return min(max(delay, 0.0), self._config.max_sleep_seconds)

    async def _drain(self, in_flight: set[asyncio.Task[None]]) -> None:
        running = _still_running(in_flight)
        if not running:
            return
        self._stopping.set()
        for held in list(self._in_hand.values()):
            if not held.started:
                _cut(held, "released")
        log.info(
            "waiting up to %.1f s for %d calls in flight",
            self._config.grace_seconds,
            len(running),
            extra={"action": "drain", "count": len(running)},
        )
        _, late = await asyncio.wait(running, timeout=self._config.grace_seconds)
        if late:
            self._aborted = True
            for held in self._in_hand.values():
                _cut(held, "abandoned")
            await asyncio.wait(late)

    async def _claim(self, limit: int) -> list[Claim]:
        now = self._clock.now()
        claims = await self._store.claims.claim_due(
            now, self._config.worker_id, self._config.lease_seconds, limit, now + self._ahead
        )
        self._store_answered()
        if claims:
            self.stats.claimed += len(claims)
            log.debug(
                "claimed %d slots",
                len(claims),
                extra={
                    "action": "claim",
                    "count": len(claims),
                    "worker_id": self._config.worker_id,
                },
            )
        return claims

    async def _claim_ready_dependants(self, limit: int) -> list[Claim]:
        self._next_dag_sweep = self._clock.now() + timedelta(seconds=self._config.dag_sweep_seconds)
        claims = await self._store.dag.claim_ready(
            self._clock.now(), self._config.worker_id, self._config.lease_seconds, limit
        )
        self.stats.claimed += len(claims)
        return claims

    async def _execute(self, claim: Claim, *, root: bool = False) -> None:
        """Call one claimed slot and record it, then run the DAG dependants it made ready, in
        parallel, each as its child (and theirs in turn). They run inside this slot's task, so
        `concurrency` counts a whole DAG run as one call: a DAG never waits for room midway,
        which would hold its leased dependants idle. While a `root` slot's own run is being
        recorded, it holds no call."""
        children = await self._execute_one(claim, root)
        self.stats.claimed += len(children)
        await asyncio.gather(*(self._execute(child) for child in children))

    async def _execute_one(self, claim: Claim, root: bool) -> list[Claim]:
        """Call one claimed slot and record it, keeping its lease from the claim until the run
        is recorded, dropped or abandoned. Never raises for what the store or the endpoint did:
        the worker keeps going with the other slots. The dependants the run started."""
        held = _InHand(claim, self._clock.now() + self._lease / 2)
        self._in_hand[claim.run_id] = held
        self._holding.set()
        recording = False
        try:
            response = await self._call(held)
            # A root with dependants goes on to call them: it keeps its room.
            if root and not claim.endpoint.spec.dependants:
                recording = True
                self._recording += 1
                self._ended.set()
            if response is not None:
                held.recording_since = self._clock.now()
                return await self._finish(claim, response)
        except StoreUnavailable as error:
            # Dropped from hand (below): its lease lapses and the reaper repairs the run.
            self._store_failed(
                error,
                "run_store_unavailable",
                "store unavailable while handling run %s; the reaper will repair it",
                claim.run_id,
                run_id=claim.run_id,
            )
        finally:
            if recording:
                self._recording -= 1
            self._in_hand.pop(claim.run_id, None)
        return []

    async def _call(self, held: _InHand) -> Response | None:
        """The endpoint's response once its slot is due, or None when the call was cut short:
        the lease was lost, or the worker is shutting down (a call under way is then abandoned;
        a slot not due yet is released for another worker). The wait and the call run in this
        task; a cut cancels it (`_cut`), and that cancellation ends here."""
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
        elif held.cut_by is None and response is not None:
            self._note_attempts(claim, response)
            return response
        elif held.started or early <= 0:
            await self._abandon(claim)
        else:
            # Not due yet: another worker can still run it on time.
            await self._release([claim])
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
        try:
            return await self._dispatcher.dispatch(request)
        except Exception as exc:
            # The dispatcher reports endpoint failures in its Response; a raise is a bug in it.
            # Record the run as failed rather than leave it `running` until the reaper comes.
            log.exception(
                "dispatcher raised for run %s",
                claim.run_id,
                extra={"action": "dispatch_error", "run_id": claim.run_id},
            )
            return Response(
                status_code=None,
                body_absence=BodyAbsence.NO_RESPONSE,
                error_kind=ErrorKind.INTERNAL,
                error_message=f"dispatcher error: {type(exc).__name__}",
            )

    async def _rest(self, seconds: float) -> bool:
        """Wait before a retry; cut short, and False, once the worker is stopping."""
        await _first_of(self._stopping.wait(), self._clock.sleep(seconds))
        return not self._stopping.is_set()

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
                extra={
                    "action": "steering_ignored",
                    "endpoint_id": claim.endpoint.id,
                    "run_id": claim.run_id,
                    "count": len(ignored),
                },
            )

    async def _keep_leases(self) -> None:
        """Extend the lease of every claim in hand at half-time, and every half lease after,
        until cancelled. Most calls end long before: this sleeps until the oldest claim's
        half-time, which every run recorded since has moved on. A run the store has not recorded
        within a whole lease is making no progress (its recording hangs on a store that went
        away): it gets no more extensions, so that its endpoint goes to another worker once the
        lease lapses rather than wait on this one."""
        while True:
            if not self._in_hand:
                self._holding.clear()
                await self._holding.wait()
                continue
            oldest = next(iter(self._in_hand.values()))
            await self._clock.sleep((oldest.extend_at - self._clock.now()).total_seconds())
            now = self._clock.now()
            due = []
            for held in self._in_hand.values():
                if held.extend_at > now:
                    break
                due.append(held)
            for held in due:
                del self._in_hand[held.claim.run_id]
            due = [held for held in due if not self._stalled(held, now)]
            for held in due:
                # To the back, with the latest time: the order stays the order of extend_at.
                held.extend_at = now + self._lease / 2
                self._in_hand[held.claim.run_id] = held
            extended = await asyncio.gather(
                *(self._extend(held) for held in due), return_exceptions=True
            )
            for error in extended:
                if error is not None:
                    # A bug in the store; this task keeps every lease, so it must not end.
                    log.error(
                        "extending a lease failed",
                        exc_info=error,
                        extra={"action": "internal_error"},
                    )

    def _stalled(self, held: _InHand, now: datetime) -> bool:
        """Whether the claim's run has waited a whole lease to be recorded; if so, say so once
        (the run stays the store's to settle: recorded if the lease is still ours then, else
        abandoned by the reaper)."""
        since = held.recording_since
        if since is None or now - since < self._lease:
            return False
        claim = held.claim
        log.warning(
            "run %s of %s not recorded after %.1f s; its lease is left to lapse",
            claim.run_id,
            claim.endpoint.ref,
            (now - since).total_seconds(),
            extra={"action": "recording_stalled", "run_id": claim.run_id},
        )
        return True

    async def _extend(self, held: _InHand) -> None:
        claim = held.claim
        try:
            await self._store.claims.extend_lease(
                claim, self._config.worker_id, self._clock.now() + self._lease
            )
            self._store_answered()
        except LeaseLost:
            # Stop extending it; a call still under way is not waited for any longer (a run
            # already being recorded is refused by the fenced finish).
            self._in_hand.pop(claim.run_id, None)
            _cut(held, "lease_lost")
        except StoreUnavailable as error:
            # The lease may well outlive the outage: keep the call going and try again.
            self._store_failed(
                error,
                "extend_failed",
                "could not extend the lease of run %s",
                claim.run_id,
                run_id=claim.run_id,
            )

    async def _finish(self, claim: Claim, response: Response) -> list[Claim]:
        """Record the run; for an endpoint with dependants, report it to them in the same
        transaction (a worker dying in between would lose the DAG run). The dependants it
        started."""
        worker_id, now = self._config.worker_id, self._clock.now()
        try:
            if claim.endpoint.spec.dependants:
                lease = self._config.lease_seconds
                run, children = await self._store.dag.finish_upstream(
                    claim, worker_id, response, lease, now
                )
            else:
                run, children = await self._store.claims.finish(claim, worker_id, response, now), []
        except LeaseLost:
            self._dropped(claim, "lease_lost")
            return []
        except SlotAlreadyRun:
            self._dropped(claim, "slot_already_run")
            return []
        self._store_answered()
        self.stats.finished += 1
        if self._observer is not None:
            self._observer.observe(claim.endpoint, run)
        if log.isEnabledFor(logging.INFO):
            self._log_finish(claim, run)
        return children

    def _log_finish(self, claim: Claim, run: Run) -> None:
        # Only when it will be written: its arguments cost more than the check, once per run.
        log.info(
            "%s slot %s: %s",
            claim.endpoint.ref,
            claim.slot_at.isoformat(),
            run.status,
            extra={
                "action": "finish",
                "endpoint_id": claim.endpoint.id,
                "run_id": run.id,
                "status": str(run.status),
                "status_code": run.status_code,
            },
        )

    def _dropped(self, claim: Claim, action: str) -> None:
        self.stats.dropped += 1
        log.warning(
            "dropped run %s of %s: %s",
            claim.run_id,
            claim.endpoint.ref,
            action,
            extra={"action": action, "endpoint_id": claim.endpoint.id, "run_id": claim.run_id},
        )

    async def _release(self, claims: Iterable[Claim]) -> None:
        for claim in claims:
            await self._store.claims.release(claim, self._config.worker_id)
            self.stats.released += 1
            log.info(
                "released %s slot %s unstarted",
                claim.endpoint.ref,
                claim.slot_at.isoformat(),
                extra={"action": "release", "endpoint_id": claim.endpoint.id},
            )

    async def _abandon(self, claim: Claim) -> None:
        await self._store.claims.abandon(
            claim, self._config.worker_id, SHUTDOWN_REASON, self._clock.now()
        )
        self.stats.abandoned += 1
        log.warning(
            "abandoned run %s of %s at shutdown",
            claim.run_id,
            claim.endpoint.ref,
            extra={"action": "abandon", "endpoint_id": claim.endpoint.id, "run_id": claim.run_id},
        )


def _cut(held: _InHand, reason: str) -> None:
    """Cut a call under way short, for `reason`; a claim not calling (yet or any more) is left
    alone."""
    if held.calling is not None and held.cut_by is None:
        held.cut_by = reason
        held.calling.cancel()


def _still_running(tasks: set[asyncio.Task[None]]) -> set[asyncio.Task[None]]:
    """The unfinished tasks; a finished one that crashed is logged (its exception retrieved)."""
    for task in tasks:
        if task.done() and not task.cancelled() and task.exception() is not None:
            log.error(
                "run handler crashed",
                exc_info=task.exception(),
                extra={"action": "internal_error"},
            )
    return {task for task in tasks if not task.done()}


async def _first_of(*sleepers: Coroutine[Any, Any, object]) -> None:
    """Return once any of `sleepers` is done; the others are cancelled. A sleeper's error is
    raised."""
    tasks = [asyncio.create_task(sleeper) for sleeper in sleepers]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    for task in tasks:
        error = None if task.cancelled() else task.exception()
        if error is not None:
            raise error
