"""The caller: a slot's call and its retries, as many attempts as the endpoint's retry policy
allows, each recorded, the last one deciding the run; each attempt traced, sent through the
dispatcher and judged by the endpoint's assertions.

Retries wait with exponential backoff and jitter (tenacity), at least the global floor and at
least as long as a `Retry-After` of the failed answer asks. They give up rather than start
after the retry deadline, one floor before the endpoint's next call
(`domain.runs.retries.retry_deadline`), and once the worker is stopping: the slot then keeps the
answer it has.
"""

from __future__ import annotations

import asyncio
import logging
import math
from datetime import timedelta

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_result,
    stop_after_attempt,
    wait_exponential,
    wait_random,
)

from cronpilot.domain.errors import TemplateUnfilled
from cronpilot.domain.evolve import evolved
from cronpilot.domain.log_extra import log_extra
from cronpilot.domain.model import Attempt, BodyAbsence, Claim, ErrorKind, Response, RetryPolicy
from cronpilot.domain.ports.clock import Clock
from cronpilot.domain.ports.dispatch import Dispatcher
from cronpilot.domain.ports.tracing import Tracer
from cronpilot.domain.runs.assertions import judged
from cronpilot.domain.runs.retries import attempt_of, may_repeat, retries, retry_deadline
from cronpilot.domain.runs.tracing import run_trace
from cronpilot.domain.schedule.steering import heeded
from cronpilot.runtime.timing import pause
from cronpilot.scheduler.requests import SentRequests, request_for, traced

# The worker's parts log as the worker: one logger to follow (or silence) a scheduler by.
log = logging.getLogger(__name__)


class Caller:
    """Calls claimed slots' endpoints for one worker; retries wait on its clock and stop once
    `stopping` is set (the slot then keeps the answer it has)."""

    def __init__(
        self, dispatcher: Dispatcher, clock: Clock, tracer: Tracer, stopping: asyncio.Event
    ) -> None:
        self._dispatcher = dispatcher
        self._clock = clock
        self._tracer = tracer
        self._stopping = stopping
        self._sent = SentRequests()

    async def call(self, claim: Claim) -> Response:
        """The response that decides `claim`'s run, with every attempt made for it
        (`attempts`)."""
        slot = _SlotCall(claim, self, self._clock)
        spec = claim.endpoint.spec
        policy = spec.retry
        if policy is None or policy.attempts <= 1 or not may_repeat(policy, spec.method):
            response = await slot.attempt()
        else:
            response = await slot.retried(policy)
        return evolved(response, attempts=tuple(slot.made))

    async def dispatch(self, claim: Claim) -> Response:
        """One attempt: the request sent, traced and judged; never raises for the endpoint."""
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
        sent = self._sent.of(claim, request)
        try:
            with self._tracer.span(
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
        return judged(claim.endpoint.spec, evolved(response, request=sent))

    async def rest(self, seconds: float) -> bool:
        """Wait before a retry; cut short, and False, once the worker is stopping."""
        return await pause(self._clock, seconds, self._stopping)


class _Stopping(Exception):
    """The worker began stopping during a retry's wait: no more attempts."""


class _SlotCall:
    def __init__(self, claim: Claim, caller: Caller, clock: Clock) -> None:
        self._claim = claim
        self._caller = caller
        self._clock = clock
        self.made: list[Attempt] = []
        self._last: Response | None = None

    @property
    def last(self) -> Response:
        assert self._last is not None, "an attempt was made"
        return self._last

    async def attempt(self) -> Response:
        """One call, recorded; its steering headers as far as the endpoint may steer."""
        response = await self._caller.dispatch(self._claim)
        now = self._clock.now()
        claim = self._claim
        steering = heeded(
            claim.endpoint.spec, response.steering, now, requested=claim.queued is not None
        )
        # `heeded` hands back what it was given when the endpoint may ask all of it (always
        # without steering headers): the answer then needs no copy.
        self._last = (
            response if steering is response.steering else evolved(response, steering=steering)
        )
        self.made.append(attempt_of(len(self.made) + 1, self._last, now))
        return self._last

    async def retried(self, policy: RetryPolicy) -> Response:
        claim = self._claim
        deadline = retry_deadline(claim, self._clock.now())
        # backoff x 2^(n-1) plus up to one backoff of jitter, so that endpoints failing
        # together (an outage) do not retry together.
        backoff = wait_exponential(multiplier=policy.backoff_seconds) + wait_random(
            0, policy.backoff_seconds
        )
        waits: dict[int, float] = {}

        def wait(state: RetryCallState) -> float:
            """The wait before the retry that follows attempt `state.attempt_number`, drawn once
            (it has jitter) for `stop` and tenacity alike, whichever asks first (tenacity 8.3
            and later ask before `stop`, 8.2 after it)."""
            number = state.attempt_number
            if number not in waits:
                steering = self.last.steering
                asked = steering.retry_after_seconds if steering is not None else None
                jittered = min(backoff(state), policy.max_backoff_seconds)
                waits[number] = max(jittered, claim.endpoint.spec.floor_seconds, asked or 0.0)
            return waits[number]

        spent = stop_after_attempt(policy.attempts)

        def stop(state: RetryCallState) -> bool:
            """Attempts spent, or the next would start after the retry deadline, or its wait is
            not a number of seconds a clock can add (a policy built outside `apply`)."""
            if spent(state):
                return True
            seconds = wait(state)
            if not math.isfinite(seconds):
                return True
            try:
                start = self._clock.now() + timedelta(seconds=seconds)
            except OverflowError:
                return True
            return deadline is not None and start > deadline

        retrying = AsyncRetrying(
            retry=retry_if_result(lambda response: retries(policy, response)),
            stop=stop,
            wait=wait,
            sleep=self._sleep,
            retry_error_callback=lambda _: self.last,
        )
        try:
            response: Response = await retrying(self.attempt)
        except _Stopping:
            return self.last
        return response

    async def _sleep(self, seconds: float) -> None:
        if not await self._caller.rest(seconds):
            raise _Stopping
