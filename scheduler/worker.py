"""The scheduler worker: claim due slots, call them, record what came back, sleep until more is due.

Any number of workers, in any number of processes, share one store. The store's atomic claim and
fenced finish keep them from running one slot twice; a worker only looks after its own calls.
Its parts (decision 0015): `Admission` decides how many slots to claim, the `SlotRunner` takes
each claim through call and record (`slots`), the `LeaseKeeper` keeps their leases (`leases`),
and this loop ties them together.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from datetime import datetime, timedelta
from typing import Any

from cronpilot.domain.errors import StoreUnavailable
from cronpilot.domain.log_extra import log_extra
from cronpilot.domain.model import Claim
from cronpilot.domain.outage import described, store_retry_delay
from cronpilot.domain.ports.bundles import SchedulerRepositories
from cronpilot.domain.ports.clock import Clock, Waker
from cronpilot.domain.ports.dispatch import Dispatcher
from cronpilot.domain.ports.telemetry import Telemetry
from cronpilot.domain.ports.tracing import Tracer
from cronpilot.domain.telemetry import NO_TELEMETRY
from cronpilot.domain.tracing import run_trace
from cronpilot.runtime.timing import Periodic, first_of, pause
from cronpilot.scheduler.admission import Admission
from cronpilot.scheduler.config import WorkerConfig
from cronpilot.scheduler.health import StoreHealth
from cronpilot.scheduler.leases import LeaseKeeper
from cronpilot.scheduler.slots import RunObserver, SlotRunner, WorkerStats

log = logging.getLogger(__name__)

QUIET_CAP = timedelta(milliseconds=100)
"""The longest quiet time, whatever the claim-ahead: slots re-planned into it wait that long."""


class SchedulerWorker:
    def __init__(
        self,
        store: SchedulerRepositories,
        dispatcher: Dispatcher,
        clock: Clock,
        waker: Waker,
        config: WorkerConfig,
        *,
        observer: RunObserver | None = None,
        tracer: Tracer | None = None,
        telemetry: Telemetry = NO_TELEMETRY,
    ) -> None:
        self._store = store
        self._telemetry = telemetry
        self._clock = clock
        self._waker = waker
        self._config = config
        self._admission = Admission(config.concurrency, config.batch_size)
        self._ahead = timedelta(seconds=config.claim_ahead_seconds)
        self._quiet = min(self._ahead / 2, QUIET_CAP)
        self._quiet_until = clock.now()
        """Set at each claim: after one that took every slot due within reach, no claim before
        this; after a full one (a backlog), no claim of less than the low water before this."""
        self._backlog = False
        """The last claim came back full: more slots may be due than there was room for."""
        self._next_dag_sweep = clock.now()
        self._health = StoreHealth()
        self._leases = LeaseKeeper(
            store.claims, clock, config.worker_id, config.lease_seconds, self._health
        )
        self._cancels = Periodic(
            "cancel watch",
            clock,
            config.cancel_poll_seconds,
            self._leases.watch_cancels,
            first_after=config.cancel_poll_seconds,
        )
        self._slots = SlotRunner(
            store.claims,
            dispatcher,
            clock,
            self._leases,
            self._health,
            worker=(config.worker_id, config.lease_seconds),
            observer=observer,
            tracer=tracer,
            telemetry=telemetry,
        )
        self._in_flight: set[asyncio.Task[None]] = set()

    @property
    def stats(self) -> WorkerStats:
        return self._slots.stats

    async def run(self, stop: asyncio.Event) -> None:
        """Work until `stop` is set, then wind down: claim nothing more, give calls in flight
        `grace_seconds`, abandon the rest. Returns with no run of this worker left `running`
        (unless the store itself was unreachable, which the reaper repairs)."""
        self._slots.aborted = False
        self._slots.stopping.clear()
        try:
            async with asyncio.TaskGroup() as tasks:
                keeper = tasks.create_task(self._leases.keep())
                self._cancels.start()
                try:
                    await self._claim_call_record(tasks, stop)
                finally:
                    await self._drain()
                    await self._cancels.stop(cut=True)
                    keeper.cancel()
        finally:
            # A crashing worker says what it did too.
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
                extra=log_extra("stop", worker_id=self._config.worker_id),
            )

    async def _claim_call_record(self, tasks: asyncio.TaskGroup, stop: asyncio.Event) -> None:
        """The loop: claim what admission allows, start a slot task for each claim (call, then
        record, in `SlotRunner.run`), sleep until more is due or room frees up."""
        failures = 0
        freed = self._slots.load.freed
        while not stop.is_set():
            self._telemetry.loop_turned("scheduler")
            freed.clear()
            try:
                claims = await self._claim(self._to_claim(), stop)
                for task in self._slots.start(tasks, claims):
                    self._in_flight.add(task)
                    task.add_done_callback(self._in_flight.discard)
                if not self._backlog or not claims:
                    await self._idle(stop)
                failures = 0
            except StoreUnavailable as error:
                failures += 1
                await self._retry_later(error, failures, stop)

    def _to_claim(self) -> int:
        load = self._slots.load
        return self._admission.to_claim(
            calling=load.calling,
            recording=load.recording,
            backlog=self._backlog,
            quiet=self._clock.now() < self._quiet_until,
        )

    async def _claim(self, wanted: int, stop: asyncio.Event) -> list[Claim]:
        """Claim up to `wanted` slots, and start every claim at once: a claim that had to wait
        for room would hold its endpoint away from other workers, and its lease would run out
        unkept. Sets the backlog: the batch came back full, so more may be due now."""
        if wanted <= 0:
            return []
        config = self._config
        started = now = self._clock.now()
        claims = await self._store.claims.claim_due(
            now, config.worker_id, config.lease_seconds, wanted, now + self._ahead
        )
        self._health.answered()
        self._telemetry.claimed(len(claims), (self._clock.now() - started).total_seconds())
        if len(claims) < wanted and self._clock.now() >= self._next_dag_sweep:
            self._next_dag_sweep = self._clock.now() + timedelta(seconds=config.dag_sweep_seconds)
            claims += await self._store.dag.claim_ready(
                self._clock.now(), config.worker_id, config.lease_seconds, wanted - len(claims)
            )
        if claims:
            self._trace_claims(claims, started)
            self._slots.stats.claimed += len(claims)
            log.debug(
                "claimed %d slots",
                len(claims),
                extra=log_extra("claim", count=len(claims), worker_id=config.worker_id),
            )
        if stop.is_set():
            await self._slots.release(claims)
            return []
        self._backlog = len(claims) == wanted
        self._quiet_until = started + self._quiet
        return claims

    def _trace_claims(self, claims: list[Claim], started: datetime) -> None:
        """A claim span in each claimed run's trace: the batch's round trips, which served them
        all."""
        ended = self._clock.now()
        tracer = self._slots.tracer
        for claim in claims:
            tracer.past_span(
                "claim", run_trace(claim), started, ended, run_id=claim.run_id, batch=len(claims)
            )

    async def _idle(self, stop: asyncio.Event) -> None:
        """Sleep until the next slot is due, a waker notification, a call ending (it frees room
        and re-plans its endpoint) or `stop`. Right after a claim that was not full, first wait
        out the quiet time, whatever calls end meanwhile: the slots falling due in it were
        claimed ahead."""
        quiet = (self._quiet_until - self._clock.now()).total_seconds()
        if quiet > 0 and not self._backlog:
            await first_of(stop.wait(), self._clock.sleep(quiet), self._waker.wait(quiet))
            if stop.is_set():
                return
        sleepers: list[Coroutine[Any, Any, object]] = []
        if self._to_claim() > 0:
            delay = await self._seconds_until_due()
            if delay <= 0:
                return
            sleepers += [self._clock.sleep(delay), self._waker.wait(self._config.max_sleep_seconds)]
        elif self._admission.room(self._slots.load.calling, self._slots.load.recording) > 0:
            # Held back by the low-water mark, which lapses with the quiet time.
            sleepers.append(self._clock.sleep(quiet))
        await first_of(stop.wait(), self._slots.load.freed.wait(), *sleepers)

    async def _seconds_until_due(self) -> float:
        due = await self._store.claims.next_due_at()
        if due is None:
            return self._config.max_sleep_seconds
        delay = (due - self._ahead - self._clock.now()).total_seconds()
        return min(max(delay, 0.0), self._config.max_sleep_seconds)

    async def _retry_later(
        self, error: StoreUnavailable, failures: int, stop: asyncio.Event
    ) -> None:
        """Wait before trying the store again: from a fifth of a second, doubling with each
        failure in a row, up to `max_sleep_seconds`. One line per try; no traceback, which says
        nothing about a database that is down."""
        delay = store_retry_delay(failures, self._config.max_sleep_seconds)
        self._health.down = True
        log.warning(
            "store unavailable (%s); retrying in %.1f s",
            described(error),
            delay,
            extra=log_extra("store_unavailable", failures=failures),
        )
        await pause(self._clock, delay, stop)

    async def _drain(self) -> None:
        """On stop: give back the claims whose call has not gone out, give the calls under way
        `grace_seconds` (real time), then cut them short and abandon their runs."""
        running = {task for task in self._in_flight if not task.done()}
        if not running:
            return
        slots = self._slots
        slots.stopping.set()
        self._leases.cut("released", unstarted_only=True)
        # The slot runner's load, not the tasks: a task runs a root and then its DAG
        # dependants, each counted while it calls or is recorded.
        load = slots.load
        log.info(
            "waiting up to %.1f s for %d calls in flight and %d runs being recorded",
            self._config.grace_seconds,
            load.calling,
            load.recording,
            extra=log_extra("drain", count=load.calling, recording=load.recording),
        )
        _, late = await asyncio.wait(running, timeout=self._config.grace_seconds)
        if late:
            slots.aborted = True
            self._leases.cut("abandoned")
            await asyncio.wait(late)
