"""The scheduler worker: claim due slots, call them, record what came back, sleep until more is due.

Any number of workers, in any number of processes, share one store. The store's atomic claim and
fenced finish keep them from running one slot twice; a worker only looks after its own calls.
Its parts (decisions 0015, 0040): `Admission` decides how many slots to claim, the `SlotRunner`
takes each claim through call and record (`slots`), the `LeaseKeeper` keeps their leases
(`leases`), and this loop ties them together. Every side task (the recorder, the lease keeper,
the cancel watch, and the side tasks it is given: housekeeping, heartbeat, learner, notifier…) is an
`async def run(stop)` under the worker's `TaskGroup`, stopped once the slots have drained.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine, Sequence
from datetime import timedelta
from typing import Any, Protocol

from cronpilot.domain.errors import StoreUnavailable
from cronpilot.domain.log_extra import log_extra
from cronpilot.domain.model import Claim
from cronpilot.domain.ports.bundles import SchedulerRepositories
from cronpilot.domain.ports.clock import Clock, Waker
from cronpilot.domain.ports.dispatch import Dispatcher
from cronpilot.domain.ports.telemetry import Telemetry
from cronpilot.domain.ports.tracing import Tracer
from cronpilot.domain.runs.outage import described, store_retry_delay
from cronpilot.domain.runs.telemetry import NO_TELEMETRY
from cronpilot.runtime.timing import Periodic, first_of, pause
from cronpilot.scheduler.admission import Admission
from cronpilot.scheduler.config import WorkerConfig
from cronpilot.scheduler.health import StoreHealth
from cronpilot.scheduler.leases import LeaseKeeper
from cronpilot.scheduler.recorder import Recorder
from cronpilot.scheduler.slots import RunObserver, SlotRunner, WorkerStats

log = logging.getLogger(__name__)

QUIET_CAP = timedelta(milliseconds=100)
"""The longest quiet time, whatever the claim-ahead: slots re-planned into it wait that long."""


class SideTask(Protocol):
    async def run(self, stop: asyncio.Event) -> None:
        """Work until `stop` is set, then return."""
        ...


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
        side: Sequence[SideTask] = (),
    ) -> None:
        self._store = store
        self._telemetry = telemetry
        self._clock = clock
        self._waker = waker
        self._config = config
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
            cut=True,
        )
        recorder = Recorder(store.claims)
        self._side: tuple[SideTask, ...] = (recorder, self._leases, self._cancels, *side)
        self._slots = SlotRunner(
            store.claims,
            dispatcher,
            clock,
            self._leases,
            self._health,
            admission=Admission(config.concurrency, config.batch_size),
            recorder=recorder,
            worker_id=config.worker_id,
            lease_seconds=config.lease_seconds,
            observer=observer,
            tracer=tracer,
            telemetry=telemetry,
        )

    @property
    def stats(self) -> WorkerStats:
        return self._slots.stats

    async def run(self, stop: asyncio.Event) -> None:
        """Work until `stop` is set, then wind down: claim nothing more, give calls in flight
        `grace_seconds`, abandon the rest, then stop the side tasks. Returns with no run of this
        worker left `running` (unless the store itself was unreachable, which the reaper
        repairs)."""
        drained = asyncio.Event()
        try:
            async with asyncio.TaskGroup() as tasks:
                for part in self._side:
                    tasks.create_task(part.run(drained))
                try:
                    await self._claim_call_record(tasks, stop)
                finally:
                    await self._slots.drain(self._config.grace_seconds)
                    drained.set()
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
        while not stop.is_set():
            self._telemetry.loop_turned("scheduler")
            self._slots.watch_freed()
            try:
                claims = await self._claim(self._to_claim(), stop)
                self._slots.start(tasks, claims)
                if not self._backlog or not claims:
                    await self._idle(stop)
                failures = 0
            except StoreUnavailable as error:
                failures += 1
                await self._retry_later(error, failures, stop)

    def _to_claim(self) -> int:
        return self._slots.to_claim(
            backlog=self._backlog, quiet=self._clock.now() < self._quiet_until
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
            self._slots.claimed(claims, started)
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

    async def _idle(self, stop: asyncio.Event) -> None:
        """Sleep until the next slot is due, a waker notification, a call ending (it frees room
        and re-plans its endpoint) or `stop`. Right after a claim that was not full, first wait
        out the quiet time, whatever calls end meanwhile: the slots falling due in it were
        claimed ahead."""
        quiet = (self._quiet_until - self._clock.now()).total_seconds()
        if quiet > 0 and not self._backlog:
            await first_of(stop.wait(), self._clock.sleep(quiet), self._notified(quiet))
            if stop.is_set():
                return
        sleepers: list[Coroutine[Any, Any, object]] = []
        if self._to_claim() > 0:
            delay = await self._seconds_until_due()
            if delay <= 0:
                return
            sleepers += [self._clock.sleep(delay), self._notified(self._config.max_sleep_seconds)]
        elif self._slots.room() > 0:
            # Held back by the low-water mark, which lapses with the quiet time.
            sleepers.append(self._clock.sleep(quiet))
        await first_of(stop.wait(), self._slots.freed(), *sleepers)

    async def _notified(self, seconds: float) -> None:
        """Wait up to `seconds` for the waker. A notification (a run asked for, a schedule or
        declaration changed, an approval given) may have made DAG waits ready: the next turn
        looks for them whenever the last look was."""
        if await self._waker.wait(seconds):
            self._next_dag_sweep = self._clock.now()

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
