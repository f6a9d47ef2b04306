"""The one timer of every worker: periodic work and waits, on the `Clock` port.

Every wait goes through the clock, so a fake clock drives housekeeping, the notifier, the
planner and the scheduler's own waits alike, and tests advance time instead of sleeping
(decision 0015).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from cronpilot.domain.errors import CronpilotError
from cronpilot.domain.log_extra import LogAction, log_extra
from cronpilot.domain.ports.clock import Clock
from cronpilot.domain.runs.outage import described

log = logging.getLogger(__name__)


async def first_of(*sleepers: Coroutine[Any, Any, object]) -> None:
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


async def pause(clock: Clock, seconds: float, stop: asyncio.Event) -> bool:
    """Wait `seconds` of the clock's time, cut short by `stop`; True if it was not."""
    if not stop.is_set():
        await first_of(stop.wait(), clock.sleep(seconds))
    return not stop.is_set()


class Periodic:
    """Runs `work` after `first_after` seconds of the clock's time, then again `seconds` after
    each turn ends (a rest between turns, not a fixed rate: a slow turn delays the next), in a
    task of its own (`run`, until its `stop` is set). `work` returns True to be run again at once
    (it took a full batch: more is waiting). With `rest`, each turn is followed by at
    least `rest()` seconds (asked after the turn): work that must take no more than a share of
    the time (learning, slow refreshes) rests longer after a slow step. A
    store error is one warning line (action `failed_action`) and the work runs again at its
    next turn; any other error is logged with its traceback (a bug; `crashed_action`), and the
    timer goes on."""

    def __init__(
        self,
        name: str,
        clock: Clock,
        seconds: float,
        work: Callable[[], Awaitable[bool]],
        *,
        first_after: float = 0.0,
        rest: Callable[[], float] | None = None,
        cut: bool = False,
        failed_action: LogAction = "periodic_failed",
        crashed_action: LogAction = "internal_error",
    ) -> None:
        self._name = name
        self._clock = clock
        self._seconds = seconds
        self._work = work
        self._first_after = first_after
        self._rest = rest
        self._failed_action: LogAction = failed_action
        self._crashed_action: LogAction = crashed_action
        self._cut = cut

    async def run(self, stop: asyncio.Event) -> None:
        """Turn until `stop` is set. A turn in progress is then let finish (it is short, and
        cutting it would cut a store transaction in half), or cancelled when the timer was made
        with `cut`: work whose turn can hang (a call over the network, as the notifier's
        deliveries) is made so."""
        delay = self._first_after
        while delay <= 0 or await pause(self._clock, delay, stop):
            if stop.is_set():
                return
            again = await (self._cut_turn(stop) if self._cut else self._turn())
            if stop.is_set():
                return
            delay = 0.0 if again else self._seconds
            if self._rest is not None:
                delay = max(delay, self._rest())

    async def _cut_turn(self, stop: asyncio.Event) -> bool:
        """A turn, cancelled if `stop` is set before it ends."""
        turn = asyncio.create_task(self._turn(), name=self._name)
        stopped = asyncio.create_task(stop.wait())
        try:
            await asyncio.wait((turn, stopped), return_when=asyncio.FIRST_COMPLETED)
        finally:
            turn.cancel()
            stopped.cancel()
            await asyncio.gather(turn, stopped, return_exceptions=True)
        return not turn.cancelled() and turn.result()

    async def _turn(self) -> bool:
        try:
            return await self._work()
        except CronpilotError as error:
            # A traceback says nothing about a store that is down.
            log.warning(
                "%s failed (%s); trying again at its next turn",
                self._name,
                described(error),
                extra=log_extra(self._failed_action, job=self._name),
            )
        except Exception:
            log.exception(
                "%s crashed", self._name, extra=log_extra(self._crashed_action, job=self._name)
            )
        return False
