"""The lease keeper: one task extends the leases of every claim a worker holds, and cuts short
the calls whose lease was lost, rather than a task per call."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from cronpilot.domain.errors import LeaseLost, StoreUnavailable
from cronpilot.domain.log_extra import log_extra
from cronpilot.domain.model import Claim
from cronpilot.domain.ports.claims import ClaimRepository
from cronpilot.domain.ports.clock import Clock
from cronpilot.runtime.timing import first_of, pause
from cronpilot.scheduler.health import StoreHealth

# The worker's parts log as the worker: one logger to follow (or silence) a scheduler by.
log = logging.getLogger(__name__)


@dataclass(slots=True, eq=False)
class InHand:
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
    """Why the call was cut short: `lease_lost`, `cancelled`, `abandoned` or `released`."""
    recording_since: datetime | None = None
    """When the call ended and the recording of its run began: a run the store cannot record
    within a lease gets no more extensions (`LeaseKeeper.run`)."""

    def cut(self, reason: str) -> None:
        """Cut a call under way short, for `reason`; a claim not calling (yet or any more) is
        left alone."""
        if self.calling is not None and self.cut_by is None:
            self.cut_by = reason
            self.calling.cancel()


class LeaseKeeper:
    def __init__(
        self,
        claims: ClaimRepository,
        clock: Clock,
        worker_id: str,
        lease_seconds: float,
        health: StoreHealth,
    ) -> None:
        self._claims = claims
        self._clock = clock
        self._worker_id = worker_id
        self._lease = timedelta(seconds=lease_seconds)
        self._health = health
        self._in_hand: dict[str, InHand] = {}
        """By run id, in the order their leases fall due for extension."""
        self._holding = asyncio.Event()

    def hold(self, claim: Claim) -> InHand:
        """Keep `claim`'s lease from now until `drop`."""
        held = InHand(claim, self._clock.now() + self._lease / 2)
        self._in_hand[claim.run_id] = held
        self._holding.set()
        return held

    def drop(self, run_id: str) -> None:
        self._in_hand.pop(run_id, None)

    def cut(self, reason: str, *, unstarted_only: bool = False) -> None:
        """Cut short every call in hand (or only those whose call has not gone out yet)."""
        for held in list(self._in_hand.values()):
            if not (unstarted_only and held.started):
                held.cut(reason)

    async def watch_cancels(self) -> bool:
        """Cut short the calls of the runs in hand that someone asked to cancel, wherever they
        asked (`domain.runs.cancelling`): one read of their marks, only while any run is in hand.
        For `runtime.timing.Periodic`: never asks to run again at once."""
        if not self._in_hand:
            return False
        for run_id in await self._claims.cancels_asked(list(self._in_hand)):
            held = self._in_hand.get(run_id)
            if held is not None:
                held.cut("cancelled")
        return False

    async def run(self, stop: asyncio.Event) -> None:
        """Extend the lease of every claim in hand at half-time, and every half lease after,
        until `stop` is set. Most calls end long before: this sleeps until the oldest claim's
        half-time, which every run recorded since has moved on. A run the store has not recorded
        within a whole lease is making no progress (its recording hangs on a store that went
        away): it gets no more extensions, so that its endpoint goes to another worker once the
        lease lapses rather than wait on this one."""
        while not stop.is_set():
            if not self._in_hand:
                self._holding.clear()
                await first_of(stop.wait(), self._holding.wait())
                continue
            oldest = next(iter(self._in_hand.values()))
            if not await pause(
                self._clock, (oldest.extend_at - self._clock.now()).total_seconds(), stop
            ):
                return
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
                        extra=log_extra("internal_error"),
                    )

    def _stalled(self, held: InHand, now: datetime) -> bool:
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
            extra=log_extra("recording_stalled", run_id=claim.run_id),
        )
        return True

    async def _extend(self, held: InHand) -> None:
        claim = held.claim
        try:
            await self._claims.extend_lease(claim, self._worker_id, self._clock.now() + self._lease)
            self._health.answered()
        except LeaseLost:
            # Stop extending it; a call still under way is not waited for any longer (a run
            # already being recorded is refused by the fenced finish).
            self._in_hand.pop(claim.run_id, None)
            held.cut("lease_lost")
        except StoreUnavailable as error:
            # The lease may well outlive the outage: keep the call going and try again.
            self._health.failed(
                error,
                "extend_failed",
                "could not extend the lease of run %s",
                claim.run_id,
                run_id=claim.run_id,
            )
