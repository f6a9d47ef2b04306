"""Endpoints steering their own schedule through the headers of their answers.

`Retry-After` on a 429 or 503 keeps the endpoint from being called before that time: the
governor plans no run earlier (nor does it pull one earlier when the time is sooner than the
plan), whether the answer was to a slot of the schedule or to a run asked for by hand.
`Cronpilot-Next-Run` from an endpoint that opted in (`accept_hints`) becomes a hint of source
`endpoint` standing for `ENDPOINT_HINT_TTL`, within the clamps a planner's hint meets; from the
answer to a run asked for by hand, it is ignored.
Pure: the dispatcher reads the headers into a `Steering`, this decides what they change.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from cronpilot.domain.model import (
    Endpoint,
    EndpointSpec,
    HintSource,
    IntervalHint,
    OneShotHint,
    Response,
    Steering,
)

ENDPOINT_HINT_TTL = timedelta(hours=1)
"""How long a hint from `Cronpilot-Next-Run` stands; each answer that repeats it renews it."""


def heeded(
    spec: EndpointSpec, steering: Steering | None, now: datetime, *, requested: bool = False
) -> Steering | None:
    """`steering` less what the endpoint may not ask, each part moved to `ignored` with why: a
    `Cronpilot-Next-Run` from an endpoint without `accept_hints` or without a schedule of its
    own, answering a run asked for by hand (`requested`: manual, backfill), or naming a time
    that is past or after the hint would expire."""
    if steering is None or (
        steering.next_run_interval_seconds is None and steering.next_run_at is None
    ):
        return steering
    reason = _refusal(spec, steering.next_run_at, now, requested)
    if reason is None:
        return steering
    return replace(
        steering,
        next_run_interval_seconds=None,
        next_run_at=None,
        ignored=(*steering.ignored, f"Cronpilot-Next-Run ignored: {reason}"),
    )


def _refusal(spec: EndpointSpec, at: datetime | None, now: datetime, requested: bool) -> str | None:
    if not spec.accept_hints:
        return "the endpoint does not accept hints (accept_hints is off)"
    if requested:
        # The pace is the schedule's: a call made beside it (or for an old slot, whose answer
        # may be about that slot's data) does not set it.
        return "a run asked for by hand (manual, backfill) does not set the schedule's pace"
    if spec.schedule.after_upstreams:
        return "the endpoint runs after its upstreams (depends_on)"
    if at is not None and at <= now:
        return f"{at.isoformat()} is not in the future"
    if at is not None and at >= now + ENDPOINT_HINT_TTL:
        return f"{at.isoformat()} falls after the hint would expire ({ENDPOINT_HINT_TTL})"
    return None


def steered(endpoint: Endpoint, response: Response, now: datetime) -> Endpoint:
    """The endpoint with what the answer `response` asked of its schedule. Any answer replaces
    the previous `Retry-After` (a call that got no answer leaves it); an accepted
    `Cronpilot-Next-Run` replaces the hint of its kind, whoever wrote it."""
    if response.status_code is None:
        return endpoint
    steering = heeded(endpoint.spec, response.steering, now)
    if steering is None:
        if endpoint.retry_after_at is None:
            return endpoint
        return replace(endpoint, retry_after_at=None)
    wait = steering.retry_after_seconds
    interval, oneshot = endpoint.interval_hint, endpoint.oneshot_hint
    expires = now + ENDPOINT_HINT_TTL
    if (asked := steering.next_run_interval_seconds) is not None:
        seconds = _within_clamps(endpoint.spec, asked)
        reason = f"Cronpilot-Next-Run: every {asked:g}s"
        if seconds != asked:
            reason += f" (clamped to {seconds:g}s)"
        interval = IntervalHint(seconds, expires, reason, HintSource.ENDPOINT)
    if (at := steering.next_run_at) is not None:
        reason = f"Cronpilot-Next-Run: at {at.isoformat()}"
        oneshot = OneShotHint(at, expires, reason, HintSource.ENDPOINT)
    return replace(
        endpoint,
        retry_after_at=None if wait is None else now + timedelta(seconds=wait),
        interval_hint=interval,
        oneshot_hint=oneshot,
    )


def held_back(endpoint: Endpoint, response: Response, now: datetime) -> Endpoint:
    """`steered` for the answer to a run asked for by hand (manual, backfill): its
    `Retry-After` holds the schedule back too, since the endpoint asked not to be called before
    then, whoever calls. Nothing else of the answer touches the schedule: a hold standing is
    only ever lengthened (a call made beside the schedule does not lift what the schedule's own
    calls were told), and a `Cronpilot-Next-Run` is ignored (`heeded`)."""
    steering = response.steering
    wait = None if steering is None else steering.retry_after_seconds
    if response.status_code is None or wait is None:
        return endpoint
    until = now + timedelta(seconds=wait)
    standing = endpoint.retry_after_at
    if standing is not None and standing >= until:
        return endpoint
    return replace(endpoint, retry_after_at=until)


def _within_clamps(spec: EndpointSpec, seconds: float) -> float:
    """An asked interval brought within the endpoint's clamps and the global floor: where a
    planner's hint outside them is refused, an endpoint cannot be told, so it is clamped."""
    seconds = max(seconds, spec.floor_seconds, spec.min_interval_seconds or 0.0)
    if spec.max_interval_seconds is not None:
        seconds = min(seconds, spec.max_interval_seconds)
    return seconds
