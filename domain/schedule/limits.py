"""Limits per target: at most N calls of one key in flight, at most M per period, whichever
worker makes them (docs/decisions/0050-limits-in-the-claim.md).

An endpoint names a key (`EndpointSpec.limit`); every endpoint naming it shares its limit. A
claim asks `decide_limits` which of its limited candidates may go: each key's earliest ones, as
many as its free concurrency (leased endpoints of the key count as in flight) and its token
bucket allow. The rest stay due, unclaimed, and the key records the hold. The memory store and
SQLite call these functions; PostgreSQL says the same in the claim statement
(`adapters.sql.limits_claim`), proven by `tests/contract/test_limits_contract.py`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import StrEnum

from cronpilot.domain.errors import InvalidConfig
from cronpilot.domain.model import Endpoint, Run, RunStatus
from cronpilot.domain.schedule.pauses import job_holds

RECHECK_SECONDS = 0.5
"""How long a key held by its concurrency keeps its slots out of `next_due`: a call of the key
ending in another worker frees the room without waking this one, which looks again then. The
worker whose call ended looks at once (its room freed)."""

TOKEN_EPSILON = 1e-9
"""Tokens are floats refilled by elapsed seconds: 0.9999999999 of a token is one."""

_RATE = re.compile(r"^\s*(\d+)\s*/\s*(s|sec|second|m|min|minute|h|hour)\s*$")
_PERIODS = {"s": 1.0, "sec": 1.0, "second": 1.0, "m": 60.0, "min": 60.0, "minute": 60.0}
_PERIODS |= {"h": 3600.0, "hour": 3600.0}


@dataclass(frozen=True, slots=True)
class Rate:
    calls: int
    per_seconds: float

    @property
    def per_second(self) -> float:
        return self.calls / self.per_seconds

    def __str__(self) -> str:
        unit = {1.0: "s", 60.0: "m", 3600.0: "h"}[self.per_seconds]
        return f"{self.calls}/{unit}"


def parse_rate(text: str, where: str) -> Rate:
    """`5/s`, `100/m`, `1000/h` as a `Rate`; raises `InvalidConfig(where, …)` otherwise, or for
    a rate of 0."""
    match = _RATE.match(text)
    if match is None:
        raise InvalidConfig(where, f"{text!r} is not a rate: write calls per s, m or h (5/s)")
    calls = int(match.group(1))
    if calls <= 0:
        raise InvalidConfig(where, "must allow at least one call per period")
    return Rate(calls, _PERIODS[match.group(2)])


@dataclass(frozen=True, slots=True)
class Limit:
    """What a `limits:` entry declares for its key."""

    key: str
    concurrency: int | None = None
    """At most this many calls of the key in flight at once; None: no bound."""
    rate: Rate | None = None
    """At most this many calls per period (a token bucket); None: no bound."""
    burst: int = 1
    """The bucket's size: calls that may go at once after a quiet spell. 1 spaces calls
    evenly, so no window of the period holds more than `rate.calls`."""


class HoldReason(StrEnum):
    CONCURRENCY = "concurrency"
    RATE = "rate"


@dataclass(frozen=True, slots=True)
class LimitState:
    """A key's limit and what the claims have recorded on it."""

    limit: Limit
    tokens: float | None = None
    """The bucket's tokens at `refilled_at`; None: full (never drawn from)."""
    refilled_at: datetime | None = None
    version: int = 0
    """Bumped by every claim that lets a call of the key go: a claimer that read an older one
    takes none (its count of calls in flight may miss the newer claim's)."""
    held: int = 0
    """Due slots or queued runs the last claim that saw any held back."""
    hold_reason: HoldReason | None = None
    held_at: datetime | None = None
    """When the hold (current, or last) began."""
    open_at: datetime | None = None
    """While held, when a claim may find room again (`RECHECK_SECONDS`, or the next token)."""

    @property
    def key(self) -> str:
        return self.limit.key


@dataclass(frozen=True, slots=True)
class LimitStatus:
    """A key as `limits list`, the API and the metrics show it."""

    state: LimitState
    in_flight: int
    """Its endpoints leased now: calls waiting for their due time, calling or being recorded."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """A limited endpoint a claim could take, and when its earliest slot or queued run is due."""

    endpoint_id: str
    key: str
    due_at: datetime


@dataclass(frozen=True, slots=True)
class LimitDecision:
    allowed: frozenset[str]
    """Ids of the limited endpoints the claim may take."""
    changed: tuple[LimitState, ...]
    """The keys' states to store (only those that changed)."""


def limited_candidates(
    endpoints: Iterable[Endpoint], waiting: Iterable[Run], due_by: datetime, now: datetime
) -> list[Candidate]:
    """The unleased endpoints naming a limit with a slot (`next_run_at`) or a queued run due by
    `due_by`, their job not paused at `now`: what a claim could take of each key, at the
    earlier of the two."""
    queued: dict[str, datetime] = {}
    for run in waiting:
        if run.status is RunStatus.QUEUED and run.due_at is not None and run.due_at <= due_by:
            queued[run.endpoint_id] = min(run.due_at, queued.get(run.endpoint_id, run.due_at))
    found = []
    for endpoint in endpoints:
        key = endpoint.spec.limit
        if key is None or endpoint.lease_owner is not None or job_holds(endpoint, now):
            continue
        slot = endpoint.next_run_at
        times = [t for t in (slot, queued.get(endpoint.id)) if t is not None and t <= due_by]
        if times:
            found.append(Candidate(endpoint.id, key, min(times)))
    return found


def after_hold(endpoint: Endpoint, at: datetime, states: Mapping[str, LimitState]) -> datetime:
    """When a slot or queued run of `endpoint` due at `at` may be claimed, as far as its key's
    hold says: `at`, or when the hold may open (`LimitState.open_at`) if later. A worker
    sleeps until then instead of claiming a held slot again and again."""
    state = None if endpoint.spec.limit is None else states.get(endpoint.spec.limit)
    if state is None or state.open_at is None:
        return at
    return max(at, state.open_at)


def held_by_limit(endpoint: Endpoint, states: Mapping[str, LimitState]) -> bool:
    """Whether the endpoint's key is holding slots back (the last claim that looked at it held
    some): a due slot of it waits for room, which the watch does not call missed."""
    state = None if endpoint.spec.limit is None else states.get(endpoint.spec.limit)
    return state is not None and state.held > 0


def calls_in_flight(endpoints: Mapping[str, Endpoint], runs: Iterable[Run]) -> dict[str, int]:
    """Calls in flight by the key their endpoint names: a leased endpoint holds one call, and
    each running run that holds its own lease (`overlap: allow`, `Run.lease_until`) one more,
    however many of one endpoint run at once."""
    counts: dict[str, int] = {}
    holding = [e for e in endpoints.values() if e.lease_owner is not None]
    holding += [
        endpoints[run.endpoint_id]
        for run in runs
        if run.lease_until is not None
        and run.status is RunStatus.RUNNING
        and run.endpoint_id in endpoints
    ]
    for endpoint in holding:
        if endpoint.spec.limit is not None:
            counts[endpoint.spec.limit] = counts.get(endpoint.spec.limit, 0) + 1
    return counts


def available_tokens(state: LimitState, now: datetime) -> float | None:
    """The bucket's tokens at `now` (None: no rate): refilled by the time elapsed since
    `refilled_at`, at most `burst`."""
    rate, burst = state.limit.rate, state.limit.burst
    if rate is None:
        return None
    if state.tokens is None or state.refilled_at is None:
        return float(burst)
    elapsed = max((now - state.refilled_at).total_seconds(), 0.0)
    return min(float(burst), state.tokens + elapsed * rate.per_second)


def grant(state: LimitState, in_flight: int, wanted: int, now: datetime) -> tuple[int, LimitState]:
    """How many of `wanted` calls of the key may go at `now` with `in_flight` already under
    way, and the key's state after they went (tokens drawn, the hold recorded)."""
    granted, reason = wanted, None
    limit = state.limit
    if limit.concurrency is not None and limit.concurrency - in_flight < granted:
        granted, reason = max(limit.concurrency - in_flight, 0), HoldReason.CONCURRENCY
    tokens = available_tokens(state, now)
    if tokens is not None and math.floor(tokens + TOKEN_EPSILON) < granted:
        granted, reason = math.floor(tokens + TOKEN_EPSILON), HoldReason.RATE
    held = wanted - granted
    after = state
    if granted > 0:
        after = replace(after, version=state.version + 1)
        if tokens is not None:
            refilled = now if state.refilled_at is None else max(state.refilled_at, now)
            after = replace(after, tokens=tokens - granted, refilled_at=refilled)
    return granted, replace(
        after,
        held=held,
        hold_reason=reason if held else state.hold_reason,
        held_at=(state.held_at if state.held else now) if held else state.held_at,
        open_at=_open_at(state, tokens, granted, reason, now) if held else None,
    )


def _open_at(
    state: LimitState, tokens: float | None, granted: int, reason: HoldReason | None, now: datetime
) -> datetime:
    if reason is HoldReason.RATE and tokens is not None and state.limit.rate is not None:
        missing = 1.0 - (tokens - granted)
        return now + timedelta(seconds=missing / state.limit.rate.per_second)
    return now + timedelta(seconds=RECHECK_SECONDS)


def decide_limits(
    candidates: Iterable[Candidate],
    states: Mapping[str, LimitState],
    in_flight: Mapping[str, int],
    limit: int,
    now: datetime,
) -> LimitDecision:
    """Which of `candidates` a claim of at most `limit` items at `now` may take: of the first
    `limit` (earliest due, then id), each key's earliest as `grant` allows (`in_flight`: its
    leased endpoints). A key with no stored state (declared since) holds nothing back."""
    first = sorted(candidates, key=lambda c: (c.due_at, c.endpoint_id))[: max(limit, 0)]
    by_key: dict[str, list[str]] = {}
    for candidate in first:
        by_key.setdefault(candidate.key, []).append(candidate.endpoint_id)
    allowed: set[str] = set()
    changed: list[LimitState] = []
    for key, ids in by_key.items():
        state = states.get(key)
        if state is None:
            allowed.update(ids)
            continue
        granted, after = grant(state, in_flight.get(key, 0), len(ids), now)
        allowed.update(ids[:granted])
        if after != state:
            changed.append(after)
    return LimitDecision(frozenset(allowed), tuple(changed))
